#pragma once
/// @file
/// A cluster described by its task times: one task-time model per worker, the paper's presets,
/// and custom scenarios from JSON files. The simulator runs one in virtual time; the runtime
/// (PoolOptions::from_scenario) slows real workers down to match one.

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ata/models/time_model.hpp"

namespace ata::models {

/// From round `round` (1-based) on, `worker` draws its task times from `model`.
struct WorkerChange {
  std::size_t round = 1;
  std::size_t worker = 0;
  TimeModel model;
};

/// The workers of a simulated cluster.
///
/// @code
/// ata::models::Scenario cifar = ata::models::make_preset("cifar", 51);
/// std::vector<double> mu = cifar.means();   // 58, 116, ..., 2958
/// @endcode
///
/// An immutable value; safe to share between threads.
class Scenario {
 public:
  /// The most workers a scenario may have: make_preset() and parse_scenario() refuse more
  /// before allocating anything, so a flag or a small file cannot take the machine's memory.
  static constexpr std::size_t kMaxWorkers = 100'000;

  /// Throws ata::InvalidArgument for no workers, more than kMaxWorkers, or a change naming a
  /// worker out of range or round 0.
  Scenario(std::string name, std::vector<TimeModel> workers, std::vector<WorkerChange> changes = {});

  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  [[nodiscard]] std::size_t workers() const noexcept { return models_.size(); }
  /// Each worker's model at round 1.
  [[nodiscard]] std::span<const TimeModel> models() const noexcept { return models_; }
  /// Later changes, sorted by round.
  [[nodiscard]] std::span<const WorkerChange> changes() const noexcept { return changes_; }
  /// Each worker's mean task time at round 1 (what OFTA is given).
  [[nodiscard]] std::vector<double> means() const;
  /// max_i mean_i at round 1: the paper's default alpha for ATA.
  [[nodiscard]] double max_mean() const;
  /// Every time multiplied by `factor` (> 0), e.g. model units to seconds.
  [[nodiscard]] Scenario scaled(double factor) const;

 private:
  std::string name_;
  std::vector<TimeModel> models_;
  std::vector<WorkerChange> changes_;
};

/// The preset names: linear, sqrt, log, quadratic, cifar, mixture, slowdown.
[[nodiscard]] std::span<const std::string_view> preset_names() noexcept;

/// The paper's presets for n workers (i = 1..n):
/// - linear, sqrt, log, quadratic: X_i = m_i/2 + Exp(mean m_i/2), m_i = 2*29*f(i) with f(i) =
///   i, sqrt(i), ln(i+1), i^2;
/// - cifar: X_i = 29 i + Exp(mean 29 i) (the paper's CIFAR-100 run; same law as linear);
/// - mixture: groups of 5 workers sharing the mean 58 g (g = 1, 2, ...), one each exponential,
///   uniform on [0, 2m], half-normal, lognormal (sigma 1) and gamma (shape 2);
/// - slowdown: sqrt, except that worker 0 (the fastest) becomes 10x slower from round
///   `change_round` on (default 1: set it to half the run).
/// Throws ata::InvalidArgument for an unknown name (listing the known ones), n = 0 or
/// n > Scenario::kMaxWorkers.
[[nodiscard]] Scenario make_preset(std::string_view name, std::size_t workers,
                                   std::size_t change_round = 1);

/// Limits of a scenario file, so that a small file cannot crash or stall a program with its
/// nesting (parsing and printing nested JSON recurse) or its size.
inline constexpr std::size_t kMaxScenarioJsonDepth = 64;        ///< arrays and objects, nested
inline constexpr std::size_t kMaxMixtureDepth = 16;             ///< mixtures inside mixtures
inline constexpr std::size_t kMaxScenarioFileBytes = 16 << 20;  ///< load_scenario(): 16 MiB

/// A scenario from JSON text; `origin` (a file name) prefixes error messages. Format:
/// @code{.json}
/// {"name": "my-cluster",
///  "workers": [{"count": 4, "model": "exponential", "mean": 2.0},
///              {"model": "shifted_exponential", "shift": 1, "mean": 1,
///               "outage": {"probability": 0.01, "timeout": 100}},
///              {"model": "mixture", "components": [{"weight": 0.9, "model": "constant", "value":
///              1},
///                                                  {"weight": 0.1, "model": "pareto", "scale": 1,
///                                                  "shape": 2.5}]}],
///  "changes": [{"round": 5000, "worker": 0, "model": "exponential", "mean": 20}]}
/// @endcode
/// Parameters by model: constant(value), exponential(mean), shifted_exponential(shift, mean),
/// gamma(shape, scale), lognormal(mu, sigma), uniform(low, high), half_normal(sigma),
/// pareto(scale, shape), mixture(components). Any model may carry an "outage" (probability at
/// most TimeModel::kMaxOutageProbability, timeout).
///
/// The reader is strict, so a typo is an error and not a silent default. It throws
/// ata::InvalidArgument naming `origin`, the place ("workers[2].components[0]") and the
/// problem for: invalid JSON (the message quotes at most a short, escaped excerpt of the
/// input); nesting deeper than kMaxScenarioJsonDepth, or mixtures deeper than
/// kMaxMixtureDepth; a key that appears twice in one object; an unknown key, or a key out of
/// place ("count" belongs to a worker, "weight" to a mixture component, "round" and "worker"
/// to a change, and each is required there except "count", default 1); a value of the wrong
/// type or out of range; mixture weights that do not sum to 1 (within 1e-6); more than
/// Scenario::kMaxWorkers workers in all.
[[nodiscard]] Scenario parse_scenario(std::string_view json_text, std::string_view origin);

/// parse_scenario() of a file's contents; throws ata::InvalidArgument, with the system's
/// reason, if it cannot be read, is a folder, or is larger than kMaxScenarioFileBytes.
[[nodiscard]] Scenario load_scenario(const std::string& path);

}  // namespace ata::models

#pragma once
/// @file
/// A simulated cluster: one task-time model per worker, the paper's presets, and custom
/// scenarios from JSON files.

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ata/sim/time_model.hpp"

namespace ata::sim {

/// From round `round` (1-based) on, `worker` draws its task times from `model`.
struct WorkerChange {
  std::size_t round = 1;
  std::size_t worker = 0;
  TimeModel model;
};

/// The workers of a simulated cluster.
///
/// @code
/// ata::sim::Scenario cifar = ata::sim::make_preset("cifar", 51);
/// std::vector<double> mu = cifar.means();   // 58, 116, ..., 2958
/// @endcode
///
/// An immutable value; safe to share between threads.
class Scenario {
 public:
  /// Throws ata::InvalidArgument for no workers or a change naming a worker out of range or
  /// round 0.
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
/// Throws ata::InvalidArgument for an unknown name (listing the known ones) or n = 0.
[[nodiscard]] Scenario make_preset(std::string_view name, std::size_t workers,
                                   std::size_t change_round = 1);

/// A scenario from JSON text; `origin` (a file name) prefixes error messages. Format:
/// @code{.json}
/// {"name": "my-cluster",
///  "workers": [{"count": 4, "model": "exponential", "mean": 2.0},
///              {"model": "shifted_exponential", "shift": 1, "mean": 1,
///               "outage": {"probability": 0.01, "timeout": 100}},
///              {"model": "mixture", "components": [{"weight": 0.9, "model": "constant", "value": 1},
///                                                  {"weight": 0.1, "model": "pareto", "scale": 1, "shape": 2.5}]}],
///  "changes": [{"round": 5000, "worker": 0, "model": "exponential", "mean": 20}]}
/// @endcode
/// Parameters by model: constant(value), exponential(mean), shifted_exponential(shift, mean),
/// gamma(shape, scale), lognormal(mu, sigma), uniform(low, high), half_normal(sigma),
/// pareto(scale, shape), mixture(components). Unknown keys are errors, so typos are caught.
[[nodiscard]] Scenario parse_scenario(std::string_view json_text, std::string_view origin);

/// parse_scenario() of a file's contents; throws ata::InvalidArgument if it cannot be read.
[[nodiscard]] Scenario load_scenario(const std::string& path);

}  // namespace ata::sim

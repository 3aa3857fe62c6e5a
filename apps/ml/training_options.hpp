#pragma once
// The command line of ata-sgd and ata-prox, parsed into options without running anything:
// training_main() runs them, and tests and fuzzers call parse_training_options() alone.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "app_support.hpp"
#include "training.hpp"

namespace ata::ml {

struct TrainingOptions {
  std::string problem = "logistic";
  std::string data_path;  ///< empty: synthetic data
  std::size_t rows = 2000;
  std::size_t cols = 20;
  double l2 = 1e-3;
  std::size_t dim = 100;
  double noise = 1e-3;
  /// A preset, a JSON file, or "none": no simulated delay (the default when --cpus or
  /// --work-factors is given and --scenario is not).
  std::string scenario = "cifar";
  std::size_t workers = 0;  ///< 0: kDefaultTrainingWorkers for a preset, or the file's count
  double unit_us = 2.0;
  bool burn = false;
  std::size_t batch = 23;
  std::size_t rounds = 2000;
  std::size_t change_round = 0;  ///< the round at which "slowdown" strikes; 0: half of rounds
  double step = 0.05;
  double target_gap = 0.01;
  std::uint64_t seed = 1;
  /// The strategies to run: as listed, each once, then OFTA and GTA when missing.
  std::vector<std::string> strategies{"gta", "ofta", "uta", "pull", "ata", "ata-e", "ata-auto"};
  double alpha = 0.0;  ///< microseconds; 0: the largest mean task time
  double eta = 1.0;
  LaneKind lanes = LaneKind::threads;
  std::vector<unsigned> cpus;             ///< empty: workers unpinned
  std::vector<std::size_t> work_factors;  ///< empty: each task runs once
  /// Tasks per worker of the calibration pass; 0: kDefaultCalibrationTasks, and only when the
  /// speeds come from the machine (scenario none, or --cpus).
  std::size_t calibration_tasks = 0;
  std::string json_path;
  std::string csv_path;
  std::string plot_dir;
  /// --trace: a Chrome-trace JSON timeline of the first and last trace_rounds rounds of each
  /// strategy (docs/timelines.md).
  std::string trace_path;
  std::size_t trace_rounds = 20;
  /// --backups on|copies|off: backup tasks of allocated strategies and of pull's racers
  /// (SchedulerOptions::set_backups), unless a strategy's plan sets its own.
  std::string backups = "off";
  /// --work-price: what a worker-second costs in wall-seconds; empty: 1/n (ata::Objective).
  std::optional<double> work_price;
  /// --ata-auto-race fungible|indexed|off: the race ata-auto may play when it learns its plan
  /// (apps::ata_auto_race); fungible, as in ata-sim: a round's gradients are samples.
  std::string ata_auto_race = "fungible";
  /// The stream strategies' flags (ringmaster, ringmaster-ata, ringmaster-oracle), as ata-sim's:
  /// --delay-threshold R (required by them; 0: not given), --stops on|off, --stream-step
  /// (default --step), --stream-gradients (default --rounds x --batch).
  std::size_t delay_threshold = 0;
  std::string stops = "on";
  std::optional<double> stream_step;
  std::size_t stream_gradients = 0;
};

inline constexpr std::size_t kDefaultTrainingWorkers = 51;
/// --trace-rounds at most: the trace keeps 2 x this many rounds per strategy.
inline constexpr std::size_t kMaxTrainingTraceRounds = 10'000;
/// Limits of the flags; the README's flag table states them. Every worker is a thread.
inline constexpr std::size_t kMaxTrainingWorkers = 1024;
inline constexpr std::size_t kMaxTrainingBatch = 1'000'000;
/// The trace keeps every round of every strategy.
inline constexpr std::size_t kMaxTrainingRounds = 1'000'000;
/// --work-factors: a task run at most this many times in a row.
inline constexpr std::size_t kMaxWorkFactor = 1000;
inline constexpr std::size_t kDefaultCalibrationTasks = 200;
/// --delay-threshold and --stream-gradients at most (the stream keeps R points of the model:
/// their memory is checked when the run is planned).
inline constexpr std::size_t kMaxTrainingDelayThreshold = 1'000'000'000;
inline constexpr std::size_t kMaxTrainingStreamGradients = 1'000'000'000'000;
inline constexpr std::size_t kMaxCalibrationTasks = 100'000;
/// The scenario of workers without simulated delay.
inline constexpr const char* kNoScenario = "none";
/// One model unit lasts from a nanosecond to a second.
inline constexpr double kMinUnitUs = 1e-3;
inline constexpr double kMaxUnitUs = 1e6;
/// Rows, columns and the quadratic's dimension, each: a vector of that many numbers fits in
/// apps::kMaxMemoryBytes (products are checked when the run is planned).
inline constexpr std::size_t kMaxTrainingSize = apps::kMaxMemoryBytes / sizeof(double);

/// Parses the command line of ata-sgd (Method::sgd) or ata-prox (Method::prox); argv[0] is
/// the program. Returns the options, or --help's text (headed by `description`, else by
/// ata-sgd's or ata-prox's); throws apps::UsageError "<flag>: <what>" for a bad flag or value,
/// or flags that do not go together. Reads no file and runs nothing (it asks the system which
/// CPUs the process may use, for --cpus).
[[nodiscard]] apps::CommandLine<TrainingOptions> parse_training_options(
    int argc, const char* const* argv, Method method, std::string_view description = {});

}  // namespace ata::ml

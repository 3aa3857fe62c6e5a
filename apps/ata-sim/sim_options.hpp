#pragma once
// ata-sim's command line, parsed into options without running anything: main() runs them,
// and tests and fuzzers call parse_sim_options() alone.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "app_support.hpp"

namespace ata::apps {

struct SimOptions {
  std::string scenario = "cifar";
  std::size_t workers = 0;  ///< 0: the preset's default (kDefaultSimWorkers), or the file's count
  std::size_t batch = 23;
  std::size_t rounds = 1000;
  std::uint64_t seed = 1;
  /// The strategies to run: as listed, each once, then OFTA and GTA when missing.
  std::vector<std::string> strategies{"gta", "ofta", "uta", "ata", "ata-e"};
  double alpha = 0.0;  ///< 0: max_i mu_i
  double eta = 1.0;
  std::size_t change_round = 0;  ///< 0: half the run
  /// --backups on|copies|off. Copies by default: docs/stragglers.md measures it (much faster
  /// with stragglers, the paper's presets unmoved); scripts that reproduce the paper's model
  /// pass off.
  std::string backups = "copies";
  double backup_threshold = 4.0;  ///< BackupOptions::threshold_multiple
  std::size_t backup_copies = 2;  ///< BackupOptions::max_copies
  /// --ata-auto-race fungible|indexed|off: the race ata-auto may play (off: quotas only, as
  /// before issue 21; AtaAutoPolicy::Options::race).
  std::string ata_auto_race = "fungible";
  /// --work-price: what a worker-second costs in wall-seconds; empty: 1/n (ata::Objective).
  std::optional<double> work_price;
  bool sgd = false;
  std::size_t dim = 100;
  double step = 1e-4;
  double noise = 1e-3;
  /// --target: time each strategy to f(x) - f* <= target (needs --sgd); the stream ones end there.
  std::optional<double> target;
  /// --delay-threshold R of the stream strategies (ringmaster, ringmaster-ata,
  /// ringmaster-oracle; required by them), --stops on|off, --stream-step (default --step),
  /// --stream-gradients (most gradients applied; default rounds x batch).
  std::size_t delay_threshold = 0;
  std::string stops = "on";
  std::optional<double> stream_step;
  std::size_t stream_gradients = 0;
  /// --frontier-probe-rounds: rounds of each of the frontier yardstick's probe runs (min with K).
  std::size_t frontier_probe_rounds = 200;
  std::string json_path;
  std::string csv_path;
  std::string plot_dir;
  /// --trace: a Chrome-trace JSON timeline of the first and last trace_rounds rounds of each
  /// strategy (docs/timelines.md), model unit = trace_unit_us microseconds.
  std::string trace_path;
  std::size_t trace_rounds = 20;
  double trace_unit_us = 1.0;
  /// --gantt-strategy: the strategy gantt.png draws (default: the first that is not a yardstick).
  std::string gantt_strategy;
};

inline constexpr std::size_t kDefaultSimWorkers = 51;
/// Limits of ata-sim's flags; the README's flag table states them.
inline constexpr std::size_t kMaxSimBatch = 1'000'000'000;
inline constexpr std::size_t kMaxSimRounds = 1'000'000'000;
inline constexpr std::size_t kMaxSimDim = 1'000'000;
/// --delay-threshold and --stream-gradients stay below these.
inline constexpr std::size_t kMaxSimDelayThreshold = 1'000'000'000;
inline constexpr std::size_t kMaxSimStreamGradients = 1'000'000'000'000;
/// The quadratic's largest curvature is below 1, so SGD on it converges for steps below 2 and
/// diverges above.
inline constexpr double kMaxSimStep = 2.0;
/// --trace-rounds keeps at most this many rounds at each end of a strategy's run.
inline constexpr std::size_t kMaxSimTraceRounds = 10'000;
/// Work, in task-time draws (plus SGD coordinates), above which a run is refused (hours) or
/// warned about (tens of seconds or more).
inline constexpr double kMaxSimDraws = 1e12;
inline constexpr double kWarnSimDraws = 1e9;
/// The EOFTA yardstick runs only when one sweep of its search is estimated below this many
/// terms (ata::sim::estimate_eofta_cost()), and it fits in memory; otherwise it is left out.
/// Measured (docs/beyond-the-paper.md): sqrt, n = 500, B = 200 estimates 6.7e8 terms a sweep
/// and solves in 34 s (17 moves); log, n = 500, B = 300 (2e9) took over 120 s.
inline constexpr double kMaxEoftaSweepTerms = 1e9;
/// The frontier yardstick runs only when its probes are estimated below this many task-time
/// draws (ata::sim::frontier_max_probes() x probe rounds x (batch + workers)); else it is left out.
inline constexpr double kMaxFrontierProbeDraws = kWarnSimDraws;

/// Parses ata-sim's command line (argv[0] is the program). Returns the options, or --help's
/// text; throws UsageError "<flag>: <what>, got '<value>'" for a bad flag or value. Checks
/// every flag against its limit, reads no file and runs nothing.
[[nodiscard]] CommandLine<SimOptions> parse_sim_options(int argc, const char* const* argv);

/// What a run costs, in task-time draws and SGD coordinate updates, with `workers` workers:
/// strategies x rounds x (batch + workers + SGD dimension); a stream strategy counts its most
/// gradients x (workers + SGD dimension) instead.
[[nodiscard]] double estimated_draws(const SimOptions& options, std::size_t workers);

}  // namespace ata::apps

#pragma once
/// @file
/// A whole simulated run of one strategy: totals, ratios and a trace to plot.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ata/core/backup_rule.hpp"
#include "ata/core/make_policy.hpp"
#include "ata/core/objective.hpp"
#include "ata/models/scenario.hpp"
#include "ata/sim/expected_round_time.hpp"
#include "ata/sim/trace.hpp"

namespace ata::sim {

/// What to run. Strategies run with the same config see the same worker times (common random
/// numbers, see Simulation) and the same SGD noise.
struct ExperimentConfig {
  models::Scenario scenario = models::make_preset("cifar", 51);
  std::size_t batch = 23;
  std::size_t rounds = 1000;
  std::uint64_t seed = 1;
  /// alpha, eta for the learners. OFTA's means are filled from the scenario, and the seed of
  /// randomised policies (ata-auto) from `seed` below.
  PolicyOptions policy;
  /// Run SGD on the paper's quadratic alongside (QuadraticSgd).
  bool sgd = false;
  std::size_t sgd_dim = 100;
  double sgd_step = 1e-4;
  double sgd_noise = 1e-3;
  /// Rounds recorded in the trace, evenly spaced (the last round always included).
  std::size_t trace_points = 400;
  /// Backup tasks for allocated strategies (see Simulation); off by default here.
  BackupOptions backups;
  /// What a run is judged by: wall + p x worker time (default p = 1/n, see Objective).
  Objective objective;
  /// Rounds whose every copy is kept (StrategyRun::traced_rounds): the first and the last this
  /// many (all of them when K <= 2 x this); 0 keeps none.
  std::size_t traced_rounds = 0;
};

/// One recorded point: totals up to and including `round`.
struct TracePoint {
  std::size_t round = 0;
  double wall_time = 0.0;
  double worker_time = 0.0;
  double regret = 0.0;  ///< sum over rounds of l(a_k, mu) - min_a l(a, mu)
  double suboptimality = 0.0;  ///< f(x_k) - f*, when SGD runs (else 0)
};

/// The outcome of one strategy.
struct StrategyRun {
  std::string name;
  double wall_time = 0.0;
  double worker_time = 0.0;
  double regret = 0.0;
  std::optional<double> final_suboptimality;
  std::vector<TracePoint> trace;
  /// The price config.objective put on a worker-second, and wall_time + work_price x worker_time.
  double work_price = 0.0;
  double objective = 0.0;
  /// Backups, summed over the rounds (see RoundRecord): unstarted tasks taken over, backup
  /// copies started, copies stopped.
  std::size_t takeovers = 0;
  std::size_t backup_copies = 0;
  std::size_t stopped_copies = 0;
  /// For "eofta": the solution it played last (the laws after the scenario's last change).
  std::optional<EoftaSolution> eofta;
  /// The copies of the first and last config.traced_rounds rounds, in round order.
  std::vector<TracedRound> traced_rounds;
};

/// Runs `strategy` (a make_policy() name, or "eofta": EoftaPolicy on the scenario's laws) for
/// config.rounds rounds. `progress`, if set, is
/// called now and then with the fraction done. Throws ata::InvalidArgument for bad settings
/// (batch 0, rounds 0, unknown strategy, missing alpha, ...), and ata::Error when SGD diverges
/// (f(x) - f* no longer finite at a trace point: the step size is too large).
/// What EOFTA ("eofta") would cost on config's cluster: estimate_eofta_cost() for the laws at
/// the start and after each change of the scenario within config.rounds, the worst of them (the
/// first that does not fit). ata-sim sizes its yardstick with it before running anything, and
/// leaves EOFTA out when it does not fit. Throws ata::InvalidArgument for batch 0.
[[nodiscard]] EoftaCost estimate_eofta_cost(const ExperimentConfig& config,
                                            double max_sweep_terms = kNoSweepLimit);

[[nodiscard]] StrategyRun run_strategy(const ExperimentConfig& config, std::string_view strategy,
                                       const std::function<void(double)>& progress = {});

}  // namespace ata::sim

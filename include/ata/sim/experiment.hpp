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
  /// The "frontier" yardstick: rounds of each probe run (min with rounds), and the sweep limit
  /// above which EOFTA's quotas are no candidate (see estimate_eofta_cost()).
  std::size_t frontier_probe_rounds = 200;
  double frontier_eofta_sweep_terms = kNoSweepLimit;
  /// Rounds whose every copy is kept (StrategyRun::traced_rounds): the first and the last this
  /// many (all of them when K <= 2 x this); 0 keeps none.
  std::size_t traced_rounds = 0;
  /// Whether each TracePoint keeps what the policy learned (TracePoint::learned_means).
  bool record_learning = false;
  /// With SGD: the suboptimality f(x) - f* whose first crossing is timed
  /// (StrategyRun::target_wall_time); unset: not timed. The stream strategies end there.
  std::optional<double> sgd_target{};
  /// The stream strategies ("ringmaster", "ringmaster-ata", "ringmaster-oracle",
  /// RingmasterStream): the delay threshold R (>= 1, required by them), whether tasks are
  /// stopped at delay R, the step of each applied gradient (0: sgd_step), and the most
  /// gradients applied (0: rounds x batch, as many as a round-based run averages).
  std::size_t stream_threshold = 0;
  bool stream_stops = true;
  double stream_step = 0.0;
  std::size_t stream_max_gradients = 0;
};

/// One candidate plan of the frontier yardstick, run for FrontierChoice::probe_rounds rounds on
/// the probe seed: its totals and objective there.
struct FrontierCandidate {
  std::string plan;  ///< a make_policy() name ("race:M", "ofta") or "eofta"
  double wall_time = 0.0;
  double worker_time = 0.0;
  double objective = 0.0;
};

/// What the frontier yardstick chose: the candidate of least probe objective.
struct FrontierChoice {
  std::string plan;
  double probe_objective = 0.0;
  std::size_t probe_rounds = 0;
  std::uint64_t probe_seed = 0;
  std::vector<FrontierCandidate> candidates;  ///< in the order they were probed
  std::string eofta_note;  ///< why EOFTA's quotas were no candidate, if they were not
};

/// The seed frontier's probes run on: distinct from `seed`, so the choice is not fitted to the
/// evaluated draws.
[[nodiscard]] constexpr std::uint64_t frontier_probe_seed(std::uint64_t seed) {
  return seed ^ 0x9E3779B97F4A7C15ULL;
}

/// The race sizes M the frontier probes for n workers, before refining: all of 1..n for n <= 16,
/// else 1, 2, 4, ... and n.
[[nodiscard]] std::vector<std::size_t> frontier_race_grid(std::size_t workers);

/// How many probe runs choose_frontier() makes at most for n workers: the grid, up to 16 refining
/// race sizes, the best race with each restart budget, OFTA with and without backup copies, and
/// EOFTA (<= log2 n + 25).
[[nodiscard]] std::size_t frontier_max_probes(std::size_t workers);

/// The best fixed plan under config.objective, chosen from the true laws: race:M (the M fastest
/// by true mean, fungible) on frontier_race_grid(), then refined between M*/2 and 2 M* (step
/// max(1, M*/8)) around the best grid M*, the best of those with each restart budget ("race:M@F"),
/// OFTA's quotas, OFTA's quotas with the backup copies ata-auto's hedged quotas carry
/// ("ofta+copies", whatever config.backups), and EOFTA's where they fit
/// (frontier_eofta_sweep_terms). A restart budget or the copies must beat the others by 1 %. Each
/// is run min(rounds, frontier_probe_rounds) rounds on frontier_probe_seed(seed), without SGD; ties
/// go to the first probed. Throws ata::InvalidArgument for bad settings (as run_strategy) or
/// frontier_probe_rounds 0.
[[nodiscard]] FrontierChoice choose_frontier(const ExperimentConfig& config);

/// One recorded point: totals up to and including `round`.
struct TracePoint {
  std::size_t round = 0;
  double wall_time = 0.0;
  double worker_time = 0.0;
  double regret = 0.0;  ///< sum over rounds of l(a_k, mu) - min_a l(a, mu)
  double suboptimality = 0.0;  ///< f(x_k) - f*, when SGD runs (else 0)
  /// With ExperimentConfig::record_learning: each worker's learned mean after `round`
  /// (AtaAutoPolicy::estimated_mean(i) for ATA-Auto, else Policy::stats(i).mean(); 0 before
  /// its first task); empty otherwise.
  std::vector<double> learned_means;
};

/// A plan ata-auto played, and in how many rounds ("quotas" or "race:M", M the chosen racers).
struct PlayedPlan {
  std::string plan;
  std::size_t rounds = 0;
};

/// The plans `policy` played (StrategyRun::played_plans): its rounds by plan, most first, then,
/// if any, the race rounds "with restart budgets". Empty for a policy that is not ata-auto. Any
/// engine's ata-auto: the thread apps report them too.
[[nodiscard]] std::vector<PlayedPlan> played_plans(const Policy& policy);

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
  /// For "frontier": the plan it chose and the probes it chose from.
  std::optional<FrontierChoice> frontier;
  /// For "ata-auto": the plans it played (most rounds first; then, if any, the race rounds
  /// "with restart budgets"), and its last evaluation of the candidates
  /// (AtaAutoPolicy::last_evaluation(); its wall and work per round), quotas first.
  std::vector<PlayedPlan> played_plans;
  std::vector<FrontierCandidate> last_evaluation;
  /// The copies of the first and last config.traced_rounds rounds, in round order.
  std::vector<TracedRound> traced_rounds;
  /// With config.sgd_target: the wall and worker time at the end of the round (or the applied
  /// gradient) where f(x) - f* first reached it; unset when it never did.
  std::optional<double> target_wall_time;
  std::optional<double> target_worker_time;
  /// And the gradients computed into the iterate by then (rounds x batch, or those applied).
  std::optional<std::size_t> target_gradients;
  /// Stream strategies: gradients applied and discarded as stale on arrival, tasks stopped at
  /// delay R, and (ringmaster-ata) the workers selected at the end, probes and changes seen.
  bool stream = false;
  std::size_t gradients_applied = 0;
  std::size_t gradients_discarded = 0;
  std::size_t tasks_stopped = 0;
  std::size_t selected_workers = 0;
  std::size_t probes = 0;
  std::size_t changes_detected = 0;
  /// The tasks whose gradient was not applied (discarded or stopped) over all tasks ended.
  [[nodiscard]] double stale_share() const noexcept;
};

/// Runs `strategy` (a make_policy() name, "eofta": EoftaPolicy on the scenario's laws, or
/// "frontier": the plan choose_frontier() picks, played on config's seed) for
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

/// Also runs the stream strategies (stream_strategy_names()): RingmasterStream with
/// config.stream_threshold, on QuadraticSgd when config.sgd, until config.sgd_target or
/// stream_max_gradients applied gradients; their wall time is the stream's time at the end, their
/// worker time includes stopped and running tasks, and their trace rounds count applied
/// gradients.
[[nodiscard]] StrategyRun run_strategy(const ExperimentConfig& config, std::string_view strategy,
                                       const std::function<void(double)>& progress = {});

}  // namespace ata::sim

#pragma once
// Minibatch training on real threads: every round, B tasks (stochastic gradients or proxes at
// the current point) run on lanes (a WorkerPool, Asio io_contexts or oneTBB arenas) under one
// strategy, and the step averages them.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "ata/core/backup_rule.hpp"
#include "ata/core/make_policy.hpp"
#include "ata/core/objective.hpp"
#include "ata/models/scenario.hpp"
#include "ata/runtime/batch_options.hpp"
#include "ata/runtime/trace_recorder.hpp"
#include "ata/sim/experiment.hpp"
#include "problems.hpp"

namespace ata::ml {

/// Where the workers run (--lanes): each kind is an ata::runtime::Lanes.
enum class LaneKind {
  threads,  ///< a WorkerPool: a thread per worker
  asio,     ///< AsioLanes: an io_context per worker, run by a thread of its own
  tbb,      ///< ArenaLanes: a oneTBB task_arena of concurrency 1 per worker
};

/// "threads", "asio", "tbb".
[[nodiscard]] const char* lane_kind_name(LaneKind kind) noexcept;

enum class Method {
  sgd,   ///< x <- x - step * mean of B stochastic gradients
  prox,  ///< x <- mean of B stochastic proxes prox_{step f_j}(x)
};

/// The asynchronous methods (ringmaster, ringmaster-ata, ringmaster-oracle: a
/// runtime::TaskStream driven by Ringmaster's rule, docs/async.md).
struct StreamSettings {
  /// Ringmaster's R: a result computed delta >= R versions ago is never applied. 0: unset
  /// (train() refuses the stream strategies).
  std::size_t delay_threshold = 0;
  /// A running task whose delay reaches R is stopped (its time censored) and its worker
  /// restarted (the stream's stale bound), instead of finishing to be discarded.
  bool stops = true;
  /// The step of each applied result; 0: TrainingConfig::step. SGD: x <- x - step g; prox:
  /// x <- x - (y - prox_{step f_j}(y)) for the point y the task started from.
  double step = 0.0;
  /// The most results a stream applies; 0: max_rounds x batch.
  std::size_t max_gradients = 0;
};

struct TrainingConfig {
  Method method = Method::sgd;
  models::Scenario scenario = models::make_preset("sqrt", 17);
  std::chrono::nanoseconds unit = std::chrono::microseconds(20);  ///< one model unit of delay
  bool burn = false;  ///< spin instead of sleeping the delays
  std::size_t batch = 23;
  std::size_t max_rounds = 2000;
  double step = 0.5;
  /// Stop once f(x) - f* <= target_gap * (f(x0) - f*).
  double target_gap = 0.05;
  std::uint64_t seed = 1;
  PolicyOptions policy;  ///< alpha (seconds), eta; OFTA's means are set from `means`
  LaneKind lanes = LaneKind::threads;
  /// False (--scenario none): the scenario only counts the workers, which run their tasks
  /// without simulated delay, as fast as the machine lets them.
  bool simulated_delays = true;
  std::vector<unsigned> cpus;             ///< worker i pinned to CPU cpus[i]; empty: unpinned
  std::vector<std::size_t> work_factors;  ///< worker i runs each task this many times; empty: 1
  /// OFTA's mean task time of each worker in seconds (a calibration's); empty: the scenario's.
  std::vector<double> means;
  BackupOptions backups;  ///< the scheduler's (SchedulerOptions::set_backups); off by default
  /// Rounds kept at each end of the run for TrainingRun::traced (0: no trace).
  std::size_t traced_rounds = 0;
  /// Whether TrainingRun::learning follows what the policy learned, round by round.
  bool record_learning = false;
  /// What a run is judged by: wall + p x worker seconds (default p = 1/n, see ata::Objective).
  Objective objective;
  StreamSettings stream;
};

struct TrainingPoint {
  std::size_t round = 0;  ///< for a stream: the results applied
  double wall_seconds = 0.0;    ///< summed batch wall times so far
  double worker_seconds = 0.0;  ///< summed worker times so far, discarded work included
  double gap = 0.0;             ///< f(x) - f*
};

/// What the policy believes of each worker's mean task time after one round, in seconds (as
/// TrainingRun::learned_means).
struct LearnedPoint {
  std::size_t round = 0;
  std::vector<double> means;
};

/// TrainingRun::learning keeps at most this many points, evenly spread over the rounds.
inline constexpr std::size_t kMaxLearningPoints = 500;

struct TrainingRun {
  std::string name;
  bool reached = false;  ///< the target gap was reached within max_rounds
  std::size_t rounds = 0;
  double wall_seconds = 0.0;
  double worker_seconds = 0.0;
  double final_gap = 0.0;
  double overhead_share = 0.0;       ///< scheduler overhead / wall, over the run
  /// wall_seconds + p x worker_seconds, p = config.objective's price (set by train(),
  /// and by the app for every trainer).
  double objective = 0.0;
  std::vector<TrainingPoint> trace;  ///< every round
  /// The mean task time of each worker as the policy saw it at the end, in seconds: ata-auto's
  /// estimate, the observed mean for the others (0 for a worker that ran nothing).
  std::vector<double> learned_means;
  /// The first and last config.traced_rounds rounds' task records (runtime::TraceRecorder).
  std::vector<runtime::TracedBatch> traced;
  /// A stream strategy's stream, its first and last config.traced_rounds x B tasks.
  std::vector<runtime::TracedStream> traced_streams;
  /// With config.record_learning: round 1, then every max_rounds / kMaxLearningPoints rounds.
  std::vector<LearnedPoint> learning;
  /// For ata-auto: the plans it played (sim::played_plans()); empty for other strategies.
  std::vector<sim::PlayedPlan> played_plans;

  /// A stream strategy's run (rounds then counts its applied results; wall and worker time run
  /// to the target, or to its last result if it was not reached).
  bool stream = false;
  std::size_t gradients_applied = 0;
  std::size_t gradients_discarded = 0;  ///< finished with delay >= R
  std::size_t tasks_stopped = 0;        ///< stopped at delay R (with stops)
  std::size_t workers_busy_at_end = 0;  ///< the selection's size at the end
  std::size_t probes = 0;               ///< ringmaster-ata's exploratory probes
  std::size_t changes_detected = 0;     ///< ringmaster-ata's change tests and alarms
  /// The largest delay of an applied result (< R by Ringmaster's rule), and the smallest of a
  /// discarded one (>= R; 0 when none was discarded).
  std::uint64_t max_applied_delay = 0;
  std::uint64_t min_discarded_delay = 0;
  /// (discarded + stopped) / (applied + discarded + stopped): the work thrown away as stale.
  [[nodiscard]] double stale_share() const noexcept;
};

/// Trains with `strategy` (a make_policy() name, or a stream strategy) on fresh lanes built
/// from config (its kind, scenario, CPUs and work factors).
/// A stream strategy runs a runtime::TaskStream: each task computes one stochastic gradient
/// (or prox) at the point of the version it started from, drawing its sample from
/// models::Rng(seed, task number), and the consumer applies it iff its delay is below
/// config.stream.delay_threshold; the loss is checked every config.batch applied results. A
/// scenario change of round r strikes the tasks started from version (r - 1) x batch on, as in
/// ata-sim.
/// Task j of round k draws its sample from models::Rng(seed + k, j), so allocated and pull
/// strategies follow the same iterates. `progress` (optional) gets the rounds done.
/// Throws ata::InvalidArgument for bad settings (a stream strategy without a delay threshold),
/// and ata::Error when the worker threads cannot
/// be started or pinned, or the training diverges (f(x) - f* no longer finite: the step is too
/// large).
[[nodiscard]] TrainingRun train(const Problem& problem, const TrainingConfig& config,
                                std::string_view strategy,
                                const std::function<void(std::size_t)>& progress = {});

/// Throws ata::InvalidArgument when a stream's last config.stream.delay_threshold points of
/// `dim` numbers would not fit in apps::kMaxMemoryBytes (train() checks it too).
void require_stream_memory(const TrainingConfig& config, std::size_t dim);

/// The mean task time of each worker of config.scenario, in seconds (OFTA's knowledge).
[[nodiscard]] std::vector<double> true_means_seconds(const TrainingConfig& config);

/// Each worker's mean task time measured on the machine, in seconds, for OFTA when no scenario
/// knows it (real shares of cores, work factors). Every worker runs `tasks_per_worker` tasks
/// of the training (at the initial point, task j drawing from models::Rng(config.seed, j)), all
/// workers at once as in a round, on fresh lanes built as train() builds them: a worker that
/// shares its core with others is measured sharing it. Throws as train(), and
/// ata::InvalidArgument for tasks_per_worker = 0.
[[nodiscard]] std::vector<double> calibrate_means(const Problem& problem,
                                                  const TrainingConfig& config,
                                                  std::size_t tasks_per_worker);

}  // namespace ata::ml

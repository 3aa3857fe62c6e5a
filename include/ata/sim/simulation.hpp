#pragma once
/// @file
/// The virtual-time round engine: one policy on one simulated cluster, round by round.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ata/core/allocation.hpp"
#include "ata/core/backup_rule.hpp"
#include "ata/core/oracle_policy.hpp"
#include "ata/core/policy.hpp"
#include "ata/models/random.hpp"
#include "ata/models/scenario.hpp"
#include "ata/sim/eofta_policy.hpp"

namespace ata::sim {

/// What one simulated round cost.
struct RoundRecord {
  std::size_t round = 0;       ///< 1-based
  double wall_time = 0.0;      ///< time until the round's last result: max_i T_i for quotas
  double worker_time = 0.0;    ///< busy worker time, stopped and discarded work included
  /// l(a_k, mu) with the workers' current true means: of the plan's quotas when it has no
  /// racers, else of the tasks each worker completed.
  double proxy_loss = 0.0;
  double optimal_proxy_loss = 0.0;  ///< min_a l(a, mu): OFTA's proxy loss
  /// With backups (see Simulation): unstarted quota tasks taken over by free workers, backup
  /// copies started, copies stopped because another copy finished first, and the most copies
  /// any one task had.
  std::size_t takeovers = 0;
  std::size_t backup_copies = 0;
  std::size_t stopped_copies = 0;
  std::size_t most_copies = 0;
  /// Copies stopped at their worker's restart budget and started afresh.
  std::size_t restarts = 0;
};

/// Who gave one task's result in a round, and when (model time from the round's start).
struct TaskResult {
  std::size_t worker = 0;
  double finish = 0.0;
};

/// One copy of a task that ran in a round (Simulation::set_copy_records()).
struct CopyRecord {
  enum class Outcome : std::uint8_t {
    accepted,   ///< its result counts
    stopped,    ///< another copy of its task finished first, or a fungible round ended
    restarted,  ///< it reached its worker's restart budget and the task started afresh
  };
  std::size_t worker = 0;
  /// The task index (for a fungible race, the number the task was started with: the quota
  /// tasks' indices, then sum of quotas, sum + 1, ... in start order).
  std::size_t task = 0;
  double start = 0.0;  ///< model time from the round's start
  double end = 0.0;
  Outcome outcome = Outcome::accepted;
};

/// Runs rounds of `policy` on `scenario` in virtual time (model units, no sleeping).
///
/// Each round runs the policy's plan (Policy::plan(), ata::Plan) as events in virtual time:
/// - a quota worker runs its tasks in a row (worker 0's a_0 first among the indices);
/// - a racer, whenever it is free, starts the next task of the race: the lowest unstarted
///   index of the race's pool in an indexed race (pull), a new sample in a fungible one (GTA);
/// - the round ends when every index has a result (quotas, indexed races), or at the B-th
///   result of a fungible race, whoever gives it; what runs then is stopped;
/// - backups (Plan::backups(), else the ones this simulation was built with): whenever a worker is
///   free (a quota worker done with its share, a racer of an indexed race once the pool is
///   empty) while the round still waits, the shared BackupRule decides whether it takes over
///   another worker's unstarted quota task or starts a backup copy of an overdue one; it is
///   asked again at every finish and whenever a running copy becomes overdue. The workers'
///   learned means are the policy's stats(i).mean(). A fungible race never hedges: no worker
///   waits there for another's task;
/// - a restart budget r_i: a copy on worker i that has run r_i is stopped and its task started
///   afresh on i, with a new draw.
/// Events happen in time order, ties by lower worker index. The first copy of a task to
/// finish gives its result and is observed (Policy::observe()); every copy stopped before its
/// end (another copy won, the budget passed, the fungible round ended) is reported with
/// Policy::observe_censored() for the time it ran, which counts as worker time. A plan of
/// quotas alone, without backups or restarts, takes a shortcut with the same outcome: worker
/// by worker, its tasks' times observed in worker order.
///
/// When a scenario's WorkerChange takes effect and the policy is an OraclePolicy, the simulation
/// gives it the new true means (OraclePolicy::set_means): OFTA is the oracle that knows the
/// cluster, so after a change it plays the optimal fixed allocation of the current means, and
/// stays the yardstick a learner is measured against; an EoftaPolicy is given the new laws
/// (EoftaPolicy::set_models) in the same way. Other policies learn of a change only through the
/// task times they observe.
///
/// Worker i draws from its own random stream (seed, i), one draw per copy it starts, so its
/// u-th task takes the same time under every strategy: strategies run with the same seed are
/// compared on common random numbers.
///
/// @code
/// auto cluster = ata::models::make_preset("cifar", 51);
/// ata::AtaPolicy ata(cluster.workers(), cluster.max_mean());
/// ata::sim::Simulation sim(cluster, ata, /*batch=*/23, /*seed=*/1);
/// double wall = 0;
/// for (int k = 0; k < 1000; ++k) wall += sim.run_round().wall_time;
/// @endcode
///
/// Not thread-safe; the policy must outlive the simulation and have scenario.workers() workers.
class Simulation {
 public:
  /// `backups`: the backups of rounds whose plan sets none. Throws ata::InvalidArgument if
  /// batch = 0, the policy has another number of workers, or the backup options are invalid
  /// (see BackupRule).
  Simulation(models::Scenario scenario, Policy& policy, std::size_t batch, std::uint64_t seed,
             const BackupOptions& backups = {});

  /// Runs the next round. Throws ata::Error, naming the policy, for a plan that cannot run a
  /// batch of B tasks (Plan::check()).
  RoundRecord run_round();

  /// Whether rounds keep a record of every copy they ran (last_copies(); off by default).
  void set_copy_records(bool on) noexcept { keep_copies_ = on; }

  [[nodiscard]] std::size_t rounds_done() const noexcept { return round_; }
  [[nodiscard]] const models::Scenario& scenario() const noexcept { return scenario_; }
  /// The workers' true means now (after any WorkerChange that has taken effect).
  [[nodiscard]] const std::vector<double>& current_means() const noexcept { return means_; }
  /// The last round's plan.
  [[nodiscard]] const Plan& last_plan() const noexcept { return plan_; }
  /// The last round's results: B entries, by task index (in finish order for a fungible race).
  [[nodiscard]] const std::vector<TaskResult>& last_results() const noexcept { return results_; }
  /// With set_copy_records(true): every copy the last round ran, in the order they ended.
  [[nodiscard]] const std::vector<CopyRecord>& last_copies() const noexcept { return copy_log_; }

 private:
  void apply_changes();
  void quota_round(RoundRecord& record);
  void event_round(RoundRecord& record, const BackupRule& rule);
  // Worker `worker`, free at `now`: its next quota task, else its next task of the race.
  void continue_on(std::size_t worker, double now);
  void start_copy(std::size_t worker, std::size_t task, double now);
  // Ends the copy running on `worker` at `now` with `outcome`; returns its running time.
  double end_copy(std::size_t worker, double now, CopyRecord::Outcome outcome);
  double completed_proxy_loss() const;

  models::Scenario scenario_;
  Policy& policy_;
  OraclePolicy* oracle_ = nullptr;  // policy_ when it is the oracle: told of every change
  EoftaPolicy* eofta_ = nullptr;    // likewise for EOFTA
  std::size_t batch_;
  std::size_t round_ = 0;
  std::size_t next_change_ = 0;
  std::vector<models::TimeModel> models_;
  std::vector<double> means_;
  std::vector<models::Rng> streams_;
  double optimal_loss_ = 0.0;
  Plan plan_;
  BackupOptions backups_;
  bool keep_copies_ = false;
  std::vector<std::size_t> completed_;  // per worker: results given this round
  std::vector<TaskResult> results_;
  std::vector<CopyRecord> copy_log_;

  // The state of the round in progress (event_round).
  struct Copy {  // what a worker runs
    std::size_t task = 0;
    double start = 0.0;
    double duration = 0.0;  // the draw; it ends earlier when stopped or restarted
    bool running = false;
  };
  bool fungible_ = false;                        // the round is a fungible race
  std::size_t next_task_ = 0;                    // the race's next index (or sample number)
  std::vector<Copy> copies_;                     // per worker
  std::vector<std::vector<std::size_t>> queue_;  // per worker: unstarted quota tasks, in order
  std::vector<std::size_t> queue_head_;          // per worker: next index of queue_ to start
  std::vector<std::size_t> task_copies_;         // per index: copies running now
  std::vector<std::size_t> task_started_;        // per index: copies started this round
  std::vector<std::size_t> sequence_;            // per worker: copies started, to spot stale events
  std::vector<std::size_t> restarted_in_row_;    // per worker: restarts since its last copy ended
                                                 // otherwise, this round (Plan::restart_budget)
  struct Event {  // a copy's end; stale once its worker's sequence has moved on
    double at;
    std::size_t worker;
    std::size_t sequence;
    bool restart;  // the copy reaches its restart budget rather than its end
  };
  std::vector<Event> events_;
  std::vector<BackupWorker> view_;
};

}  // namespace ata::sim

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
  double wall_time = 0.0;      ///< time until the B-th result: max_i T_i when allocated
  double worker_time = 0.0;    ///< busy worker time, discarded work included
  /// l(a_k, mu) with the workers' current true means; for greedy and pull rounds, of the
  /// allocation that actually completed.
  double proxy_loss = 0.0;
  double optimal_proxy_loss = 0.0;  ///< min_a l(a, mu): OFTA's proxy loss
  /// Allocated rounds with backups (see Simulation): unstarted tasks taken over by idle workers,
  /// backup copies started, copies stopped because another copy finished first, and the most
  /// copies any one task had.
  std::size_t takeovers = 0;
  std::size_t backup_copies = 0;
  std::size_t stopped_copies = 0;
  std::size_t most_copies = 0;
};

/// Who gave one task's result in a round, and when (model time from the round's start).
struct TaskResult {
  std::size_t worker = 0;
  double finish = 0.0;
};

/// Runs rounds of `policy` on `scenario` in virtual time (model units, no sleeping).
///
/// Dispatch by Policy::dispatch():
/// - allocated: worker i runs its a_i tasks in a row; wall = max_i T_i, worker time = sum_i T_i.
/// - greedy (GTA): every worker starts a task at time 0 and starts another whenever one
///   finishes; the round ends at the B-th completion; in-flight tasks are discarded, so the
///   worker time is n x wall time.
/// - pull: B tasks in a shared queue; an idle worker (lowest index first) takes the next one;
///   the round ends when all B are done; worker time is the busy time.
/// Each completed task's duration is passed to policy.observe(); discarded ones are not (the
/// policy only sees finished work, as on real machines).
///
/// When a scenario's WorkerChange takes effect and the policy is an OraclePolicy, the simulation
/// gives it the new true means (OraclePolicy::set_means): OFTA is the oracle that knows the
/// cluster, so after a change it plays the optimal fixed allocation of the current means, and
/// stays the yardstick a learner is measured against; an EoftaPolicy is given the new laws
/// (EoftaPolicy::set_models) in the same way. Other policies learn of a change only through the
/// task times they observe.
///
/// Backups (allocated dispatch, BackupOptions::enabled): the round's tasks 0..B-1 are queued
/// on the workers in allocation order (worker 0's a_0 first), each worker runs its queue in order,
/// and whenever a worker with a share has finished it while the round still waits, the shared
/// BackupRule decides whether it takes over another worker's unstarted task or starts a backup
/// copy of an overdue one; it is asked again at every finish and whenever a running copy
/// becomes overdue. The workers' learned means are the policy's stats(i).mean(). The first
/// copy of a task to finish gives its result and is observed; the others are stopped at once,
/// their running time counts as worker time and is reported with Policy::observe_censored().
/// A copy draws its time from its own worker's stream, so an outage hangs one copy, not the
/// task. Greedy and pull rounds ignore backups (no worker waits there for another's task).
///
/// Worker i draws from its own random stream (seed, i), so its u-th task takes the same time
/// under every strategy: strategies run with the same seed are compared on common random numbers.
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
  /// Throws ata::InvalidArgument if batch = 0, the policy has another number of workers, or the
  /// backup options are invalid (see BackupRule).
  Simulation(models::Scenario scenario, Policy& policy, std::size_t batch, std::uint64_t seed,
             const BackupOptions& backups = {});

  /// Runs the next round.
  RoundRecord run_round();

  [[nodiscard]] std::size_t rounds_done() const noexcept { return round_; }
  [[nodiscard]] const models::Scenario& scenario() const noexcept { return scenario_; }
  /// The workers' true means now (after any WorkerChange that has taken effect).
  [[nodiscard]] const std::vector<double>& current_means() const noexcept { return means_; }
  /// The last allocated round's results, by task index (B entries; empty after a greedy or pull
  /// round): every index has exactly one, with or without backups.
  [[nodiscard]] const std::vector<TaskResult>& last_results() const noexcept { return results_; }

 private:
  void apply_changes();
  void allocated_round(RoundRecord& record);
  void backup_round(RoundRecord& record);
  void start_copy(std::size_t worker, std::size_t task, double now);
  void greedy_round(RoundRecord& record);
  void pull_round(RoundRecord& record);
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
  Allocation allocation_;
  std::vector<std::size_t> completed_;               // per worker, greedy and pull rounds
  std::vector<double> in_flight_;                    // duration of each worker's current task
  std::vector<std::pair<double, std::size_t>> heap_;  // (finish time, worker)
  std::vector<TaskResult> results_;

  // Backups: the rule, and the state of the round in progress.
  BackupRule rule_;
  struct Copy {  // what a worker runs
    std::size_t task = 0;
    double start = 0.0;
    double duration = 0.0;
    bool running = false;
  };
  std::vector<Copy> copies_;                     // per worker
  std::vector<std::vector<std::size_t>> queue_;  // per worker: unstarted task indices, in order
  std::vector<std::size_t> queue_head_;          // per worker: next index of queue_ to start
  std::vector<std::size_t> task_copies_;         // per task: copies running now
  std::vector<std::size_t> task_started_;        // per task: copies started this round
  std::vector<std::size_t> sequence_;            // per worker: copies started, to spot stale events
  std::vector<unsigned char> has_share_;         // per worker: a_i > 0 this round
  struct Event {  // a copy's finish; stale once its worker's sequence has moved on
    double finish;
    std::size_t worker;
    std::size_t sequence;
  };
  std::vector<Event> events_;
  std::vector<BackupWorker> view_;
};

}  // namespace ata::sim

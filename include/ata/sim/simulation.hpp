#pragma once
/// @file
/// The virtual-time round engine: one policy on one simulated cluster, round by round.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ata/core/allocation.hpp"
#include "ata/core/oracle_policy.hpp"
#include "ata/core/policy.hpp"
#include "ata/sim/eofta_policy.hpp"
#include "ata/sim/random.hpp"
#include "ata/sim/scenario.hpp"

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
/// Worker i draws from its own random stream (seed, i), so its u-th task takes the same time
/// under every strategy: strategies run with the same seed are compared on common random numbers.
///
/// @code
/// auto cluster = ata::sim::make_preset("cifar", 51);
/// ata::AtaPolicy ata(cluster.workers(), cluster.max_mean());
/// ata::sim::Simulation sim(cluster, ata, /*batch=*/23, /*seed=*/1);
/// double wall = 0;
/// for (int k = 0; k < 1000; ++k) wall += sim.run_round().wall_time;
/// @endcode
///
/// Not thread-safe; the policy must outlive the simulation and have scenario.workers() workers.
class Simulation {
 public:
  /// Throws ata::InvalidArgument if batch = 0 or the policy has another number of workers.
  Simulation(Scenario scenario, Policy& policy, std::size_t batch, std::uint64_t seed);

  /// Runs the next round.
  RoundRecord run_round();

  [[nodiscard]] std::size_t rounds_done() const noexcept { return round_; }
  [[nodiscard]] const Scenario& scenario() const noexcept { return scenario_; }
  /// The workers' true means now (after any WorkerChange that has taken effect).
  [[nodiscard]] const std::vector<double>& current_means() const noexcept { return means_; }

 private:
  void apply_changes();
  void allocated_round(RoundRecord& record);
  void greedy_round(RoundRecord& record);
  void pull_round(RoundRecord& record);
  double completed_proxy_loss() const;

  Scenario scenario_;
  Policy& policy_;
  OraclePolicy* oracle_ = nullptr;  // policy_ when it is the oracle: told of every change
  EoftaPolicy* eofta_ = nullptr;    // likewise for EOFTA
  std::size_t batch_;
  std::size_t round_ = 0;
  std::size_t next_change_ = 0;
  std::vector<TimeModel> models_;
  std::vector<double> means_;
  std::vector<Rng> streams_;
  double optimal_loss_ = 0.0;
  Allocation allocation_;
  std::vector<std::size_t> completed_;               // per worker, greedy and pull rounds
  std::vector<double> in_flight_;                    // duration of each worker's current task
  std::vector<std::pair<double, std::size_t>> heap_;  // (finish time, worker)
};

}  // namespace ata::sim

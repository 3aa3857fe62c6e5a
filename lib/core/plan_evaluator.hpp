#pragma once
// ata-auto's choice of a plan kind: the expected objective wall + p x work of candidate plans
// (quotas with or without backup copies, races of the m fastest) under the learned laws, by
// Monte Carlo on common random numbers. Internal to the library.

#include <array>
#include <cstddef>
#include <limits>
#include <cstdint>
#include <span>
#include <vector>

#include "ata/core/ata_auto_policy.hpp"
#include "ata/core/backup_rule.hpp"
#include "ata/core/plan.hpp"

namespace ata::detail {

/// One candidate's estimate per round: its racers (0: the quotas), mean wall, work, objective,
/// restart budget, and whether the quotas are hedged.
using PlanEstimate = AtaAutoPolicy::PlanEstimate;

/// Estimates, under learned laws, the objective of a quota plan and of races of the m workers
/// with the smallest means, and names the best. The laws are a scale family: worker j's time is
/// means[j] x R, R drawn from `ratios` (ata-auto's pooled shape, rescaled here to mean 1). Every
/// candidate sees the same draws: round r's k-th task of the j-th fastest worker takes the same
/// ratio in every candidate (common random numbers), so that the comparison's noise is far
/// below each estimate's.
///
/// Candidates: the quotas; given the means the drivers' backup rule reads, the quotas hedged
/// (kHedging: backup copies of overdue tasks, as every engine runs a plan with
/// Plan::set_backups(kHedging)), when the shape holds a ratio long enough to make a copy overdue
/// (else none ever is, and the hedged quotas are the quotas); and races of m = 1, 2, 4, ...
/// (doubling) and all of the workers, then refined between m*/2 and 2 m* in steps of max(1, m*/8)
/// around the best grid m* (the frontier yardstick's grid, docs/frontier.md); or, for a local step
/// around a race of m, the quotas (hedged too) and races of m and m -/+ max(1, m/8). When the
/// shape's cv^2 (from the last tabulate_renewals()) is above kRestartCv2, the best race is also
/// tried with restart budgets: a copy that has run kRestartBudgets[k] x its worker's mean is
/// stopped and the same task started afresh on that worker. Each candidate is simulated for
/// clamp(kTasks / B, kMinRounds, kMaxRounds) rounds. A fungible race's work is m x its wall (every
/// racer computes until the B-th result); an indexed race's is the sum of its copies' times.
///
/// The hedged quotas play the quota candidate's draws (worker j's k-th copy of a round takes
/// the ratio its k-th task takes there: its own tasks first, then any backup copies) through
/// ata::BackupRule itself, driven as the simulator drives it (next() until none, then the next
/// finish or time_to_next_overdue()), the rule reading for each worker the mean the engines'
/// rule reads (Policy::stats(i).mean(): finished times only, so a worker's hangs that backups
/// stop leave it) and its time drawn from the planning means. Wall: the round's last result;
/// work: every copy's running time, stopped copies included. A round in which no task runs long
/// enough to be overdue cannot start a copy, and is the quota round. The rule's min_overdue
/// (1 ms on threads) is not modelled: model units have no clock.
///
/// Cost: O(rounds x (B + m) log m) per race candidate, O(rounds x B) for the quotas, and
/// O(q B) more for each hedged round that has a ratio above the threshold (q <= B: the workers
/// with quotas); events()
/// measures the last choose()'s cost in task draws and heap steps, for the caller's
/// amortisation. Deterministic.
///
/// Not thread-safe; keeps scratch buffers between calls.
class PlanEvaluator {
 public:
  static constexpr std::size_t kTasks = 1472;  // 64 rounds of the paper's B = 23
  static constexpr std::size_t kMinRounds = 8;
  static constexpr std::size_t kMaxRounds = 64;
  static constexpr std::size_t kPaths = 512;
  static constexpr double kNoRestart = std::numeric_limits<double>::infinity();
  /// Restart budgets are tried when the shape's cv^2 exceeds this: an exponential's is 1 (a
  /// budget gains nothing), a gamma's of shape 0.5 is 2, where budgets pay and an estimate
  /// falls on either side of 2.
  static constexpr double kRestartCv2 = 1.5;
  /// Restart budgets tried, in multiples of each racer's mean.
  static constexpr std::array<double, 4> kRestartBudgets{0.25, 0.5, 1.0, 2.0};
  static constexpr std::size_t kGrid = 97;
  /// The hedged quotas' backups: the rule's default copies (threshold 4 x the worker's mean,
  /// two copies at most). Plans that choose them carry exactly these.
  inline static const BackupOptions kHedging = BackupOptions{}.set_mode(BackupMode::copies);

  explicit PlanEvaluator(std::uint64_t seed);

  /// `means` ascending (the known workers, fastest first), `quotas` the tasks of the quota plan
  /// per entry of `means` (summing to `batch`), `ratios` non-empty with a positive mean.
  /// `around`: 0 for the full grid, else the racers of a local step. Returns the candidate of
  /// least objective (ties: the quotas, then the race tried first); all() holds every
  /// candidate's estimate. Throws ata::InvalidArgument for bad inputs (no workers, a mean
  /// negative, not finite or out of order, quotas of another size or sum, B = 0, no ratios or a
  /// negative one, a negative or NaN price).
  /// `restarts`: whether races with restart budgets are candidates too (above kRestartCv2);
  /// `rule_means`: empty, no hedged quotas; else per entry of `means`, the mean the driver's
  /// backup rule reads for that worker (Policy::stats(i).mean(), 0 when unknown).
  PlanEstimate choose(std::span<const double> means, std::span<const std::size_t> quotas,
                      std::span<const double> ratios, std::size_t batch, double price,
                      RaceKind kind, std::size_t around, bool restarts,
                      std::span<const double> rule_means);
  [[nodiscard]] std::span<const PlanEstimate> all() const noexcept { return estimates_; }

  /// Tabulates the shape's renewal function M(x): the expected number of tasks a worker
  /// computing back to back from 0 finishes within x of its mean task times, on kPaths
  /// resampled paths, at x = 2^(g/8 - 6) for g = 0..kGrid-1 (1/64 to 64), and the shape's cv^2.
  /// `ratios` non-empty with a positive mean. For an exponential shape M(x) = x; a shape with a
  /// heavy tail finishes more than x tasks in short windows (most tasks are short).
  void tabulate_renewals(std::span<const double> ratios);
  [[nodiscard]] bool has_renewals() const noexcept { return !renewals_.empty(); }
  /// M(x) for x >= 0: linear below the grid, x - 64 + M(64) above. Requires has_renewals().
  [[nodiscard]] double renewals(double windows) const noexcept;
  /// The x with M(x) = count (the inverse), for count > 0. Requires has_renewals().
  [[nodiscard]] double windows_for(double count) const noexcept;
  /// The cv^2 of the ratios last tabulated.
  [[nodiscard]] double shape_cv2() const noexcept { return shape_cv2_; }
  [[nodiscard]] std::size_t events() const noexcept { return events_; }

 private:
  double ratio(std::size_t round, std::size_t worker, std::size_t task) const noexcept;
  // The quotas' estimate, and unless `rule_means` is empty the hedged quotas' on the same draws
  // after it.
  void quotas(std::span<const double> means, std::span<const std::size_t> tasks, double price,
              std::span<const double> rule_means);
  // One round of the hedged quotas (round `round`'s draws): its wall and work.
  std::pair<double, double> hedged_round(std::size_t round, std::span<const double> means,
                                         std::span<const std::size_t> tasks,
                                         std::span<const double> rule_means);
  PlanEstimate race(std::span<const double> means, std::size_t racers, std::size_t batch,
                    double price, RaceKind kind, double restart);

  std::uint64_t seed_;
  std::uint64_t evaluation_ = 0;  // a fresh set of common draws per choose()
  std::size_t rounds_ = kMaxRounds;
  std::span<const double> ratios_;
  double ratio_scale_ = 1.0;  // 1 / the ratios' mean
  std::size_t events_ = 0;
  std::vector<PlanEstimate> estimates_;
  std::vector<std::pair<double, std::size_t>> heap_;  // (end of the running copy, racer)
  std::vector<std::size_t> started_;                  // tasks started per racer
  std::vector<std::size_t> restarted_in_row_;         // per racer (ata::backed_off_budget)
  std::vector<double> grid_;                          // the renewal grid's points
  std::vector<double> renewals_;                      // M at them
  double shape_cv2_ = 1.0;
  // The hedged quotas' state, per quota worker: the rule's view, the worker's index in `means`,
  // its own tasks started, copies started (its draws), and its running copy's task, start, end
  // and length; per task, its copies running.
  const BackupRule hedging_{kHedging};
  std::vector<double> overdue_ratio_;  // per worker: the least ratio whose copy becomes overdue
  std::vector<BackupWorker> view_;
  std::vector<std::size_t> hedged_worker_;
  std::vector<std::size_t> own_started_;
  std::vector<std::size_t> copies_started_;
  std::vector<std::size_t> running_task_;
  std::vector<double> copy_start_;
  std::vector<double> copy_end_;
  std::vector<unsigned char> copy_long_;  // 1: the running copy will become overdue
  std::vector<std::size_t> task_copies_;
  std::vector<std::size_t> first_task_;  // each quota worker's first task index
};

}  // namespace ata::detail

#pragma once
/// @file
/// A plan: what each worker does in one batch. Policies return plans; the simulator, the
/// thread runtime and the MPI back-end each execute them (docs/design.md).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <variant>
#include <vector>

#include "ata/core/allocation.hpp"
#include "ata/core/backup_rule.hpp"

namespace ata {

/// The shape of a plan, as reports name it.
enum class Dispatch {
  allocated,  ///< quotas only: worker i runs its a_i tasks in a row (ATA, OFTA, UTA)
  greedy,     ///< a fungible race and no quotas: racers compute until B results are in (GTA)
  pull,       ///< an indexed race and no quotas: racers claim the B tasks one by one (pull)
  mixed,      ///< quotas and racers in one batch
};

/// How a race's results count.
enum class RaceKind : std::uint8_t {
  /// The race claims task indices: each racer that becomes free starts the lowest unstarted
  /// index of the race's pool (the indices the quotas leave, [sum of quotas, B)), so exactly
  /// one copy of each index runs unless backups add copies. The batch ends when every index
  /// has a result.
  indexed,
  /// Tasks are interchangeable samples (stochastic gradients): racers start new tasks back to
  /// back until B results are in, whoever gives them; what still runs then is stopped and
  /// discarded, its time counted as worker time.
  fungible,
};

/// A worker that runs `tasks` of the batch's indices in a row.
struct Quota {
  std::size_t tasks = 0;
  friend bool operator==(const Quota&, const Quota&) = default;
};
/// A member of the batch's race.
struct Racer {
  friend bool operator==(const Racer&, const Racer&) = default;
};
/// A worker the batch does not use.
struct Idle {
  friend bool operator==(const Idle&, const Idle&) = default;
};
/// What one worker does in a batch.
using Role = std::variant<Idle, Quota, Racer>;

/// Restarts in a row on one worker after which its budget backs off (backed_off_budget()).
inline constexpr std::size_t kRestartsBeforeBackoff = 64;

/// The restart budget of a copy that follows `restarted` restarts in a row on its worker in
/// this batch: `budget`, doubled for each restart in a row past kRestartsBeforeBackoff. A
/// worker whose every copy outlasts its budget (a budget too tight for its times: tasks of
/// fixed length, a loaded machine) still finishes one instead of restarting forever; a budget
/// that a copy meets with probability q backs off with probability (1 - q)^64, never in
/// practice. The simulator, the threads and the MPI ranks all apply it.
[[nodiscard]] double backed_off_budget(double budget, std::size_t restarted) noexcept;

/// What each of n workers does in one batch of B tasks.
///
/// @code
/// // ATA's plan: quotas.
/// ata::Plan allocated = ata::Plan::quotas(ata::Allocation(std::vector<std::size_t>{3, 1, 0}));
/// // Race the two fastest of four workers until B results are in (Rennala SGD on a subset).
/// std::vector<std::size_t> fastest{0, 2};
/// ata::Plan race = ata::Plan::race(4, fastest, ata::RaceKind::fungible);
/// // Quotas with backup copies of overdue tasks, and a task restarted after 5 s on worker 1.
/// ata::Plan hedged = ata::Plan::quotas(ata::Allocation(std::vector<std::size_t>{2, 2}))
///                        .set_backups(ata::BackupOptions{}.set_mode(ata::BackupMode::copies))
///                        .set_restart_after(1, 5.0);
/// @endcode
///
/// The batch's task indices 0..B-1: quota workers own consecutive ranges in worker order
/// (worker 0's a_0 first); the rest, [sum of quotas, B), form the race's pool. Beside the
/// roles a plan may carry:
/// - backups (ata::BackupRule's options: the batch's hedging): a worker that is free (a quota
///   worker done with its share, a racer of an indexed race once the pool is empty) takes
///   over unstarted quota tasks or runs a copy of an overdue one; the first copy to finish
///   wins, the others are stopped and their time censored;
/// - retries: how often a task that throws is run again elsewhere (thread and MPI runtimes);
/// - restart budgets: a copy on worker i that has run restart_after(i) is stopped, its time
///   censored, and the same task started afresh on that worker (the idea of MindFlayer SGD:
///   under heavy tails a fresh draw beats waiting).
/// A setting left unset (backups(), retries()) takes the driver's default: the options the
/// simulator or the scheduler was built with.
///
/// A plain value type: copies are independent; not synchronised.
class Plan {
 public:
  Plan() = default;
  /// `workers` workers, all idle.
  explicit Plan(std::size_t workers);

  /// Quotas: worker i runs allocation[i] tasks in a row.
  [[nodiscard]] static Plan quotas(Allocation allocation);
  /// Every worker races.
  [[nodiscard]] static Plan race(std::size_t workers, RaceKind kind);
  /// The workers listed in `members` race, the others are idle. Throws ata::InvalidArgument for
  /// a member out of range.
  [[nodiscard]] static Plan race(std::size_t workers, std::span<const std::size_t> members,
                                 RaceKind kind);

  [[nodiscard]] std::size_t workers() const noexcept { return quotas_.size(); }
  /// Worker `worker`'s role; throws ata::InvalidArgument when out of range.
  [[nodiscard]] Role role(std::size_t worker) const;
  /// Tasks each worker runs as its quota (0 for racers and idle workers).
  [[nodiscard]] const Allocation& quotas() const noexcept { return quotas_; }
  /// The racers, ascending.
  [[nodiscard]] std::span<const std::size_t> racers() const noexcept { return racers_; }
  /// Whether `worker` races (unchecked index).
  [[nodiscard]] bool is_racer(std::size_t worker) const noexcept { return racer_[worker] != 0; }
  [[nodiscard]] RaceKind race_kind() const noexcept { return race_kind_; }
  /// The plan's shape (Dispatch::allocated for a plan without racers).
  [[nodiscard]] Dispatch dispatch() const noexcept;
  /// The backup rule's settings (the batch's hedging), when the plan sets them.
  [[nodiscard]] const std::optional<BackupOptions>& backups() const noexcept { return backups_; }
  /// Retries per task, when the plan sets them.
  [[nodiscard]] const std::optional<std::size_t>& retries() const noexcept { return retries_; }
  /// Worker `worker`'s restart budget in seconds (model units in virtual time); +infinity:
  /// none. Unchecked index.
  [[nodiscard]] double restart_after(std::size_t worker) const noexcept;
  /// Whether any worker has a finite restart budget.
  [[nodiscard]] bool has_restarts() const noexcept { return !restart_after_.empty(); }
  /// The budget of a copy on `worker` that follows `restarted` restarts in a row there in this
  /// batch: ata::backed_off_budget(restart_after(worker), restarted).
  [[nodiscard]] double restart_budget(std::size_t worker, std::size_t restarted) const noexcept;

  /// Makes `worker` a quota worker with `tasks` tasks (0: idle). Throws ata::InvalidArgument
  /// when out of range.
  Plan& set_quota(std::size_t worker, std::size_t tasks);
  /// Makes `worker` a racer. Throws ata::InvalidArgument when out of range.
  Plan& set_racer(std::size_t worker);
  /// Makes `worker` idle. Throws ata::InvalidArgument when out of range.
  Plan& set_idle(std::size_t worker);
  Plan& set_race_kind(RaceKind kind) noexcept {
    race_kind_ = kind;
    return *this;
  }
  /// Throws ata::InvalidArgument for settings ata::BackupRule refuses.
  Plan& set_backups(const BackupOptions& backups);
  Plan& set_retries(std::size_t retries) noexcept {
    retries_ = retries;
    return *this;
  }
  /// Restarts a copy on `worker` once it has run `seconds` (> 0; +infinity: never). Throws
  /// ata::InvalidArgument for a worker out of range or a budget that is NaN or <= 0.
  Plan& set_restart_after(std::size_t worker, double seconds);

  /// Every worker idle, no backups, retries or restarts; keeps the storage for `workers`.
  void reset(std::size_t workers);

  /// Throws ata::Error, naming `policy`, unless the plan can run a batch of `batch` tasks on
  /// `workers` workers: one role per worker, quotas summing to at most B, and racers whenever
  /// they sum to less.
  void check(std::size_t batch, std::size_t workers, std::string_view policy) const;

  friend bool operator==(const Plan&, const Plan&) = default;

 private:
  friend class Policy;  // fills quotas_ in place from a strategy's choose()

  Allocation quotas_;
  std::vector<unsigned char> racer_;  // per worker
  std::vector<std::size_t> racers_;   // ascending
  RaceKind race_kind_ = RaceKind::indexed;
  std::optional<BackupOptions> backups_;
  std::optional<std::size_t> retries_;
  std::vector<double> restart_after_;  // empty: no restarts; else one budget per worker
};

/// The name of a plan's shape: "allocated", "greedy", "pull" or "mixed".
[[nodiscard]] std::string_view dispatch_name(Dispatch dispatch) noexcept;

}  // namespace ata

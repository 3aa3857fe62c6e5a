#pragma once
/// @file
/// What one batch cost: its allocation, every task's time, busy and wall time.

#include <chrono>
#include <cstddef>
#include <exception>
#include <vector>

#include "ata/core/allocation.hpp"
#include "ata/core/policy.hpp"

namespace ata::runtime {

/// One task that ran: which, where, when, how long (slowdown included), and whether its
/// result was kept.
///
/// @code
/// for (const ata::runtime::TaskRecord& t : report.tasks) {
///   if (!t.accepted) wasted += t.duration;   // greedy mode's stopped surplus
///   if (t.has_start()) began.push_back(report.start + t.start);   // a steady_clock time
/// }
/// @endcode
struct TaskRecord {
  /// TaskRecord::start of a copy whose start was not recorded.
  static constexpr std::chrono::nanoseconds kUnmeasured = std::chrono::nanoseconds::min();

  std::size_t task = 0;
  std::size_t worker = 0;
  std::chrono::nanoseconds duration{0};
  /// False for greedy mode's surplus tasks, for backup copies that lost (stopped or finished
  /// second), for copies stopped at their restart budget and for failed attempts that were
  /// retried: their results were discarded.
  bool accepted = true;
  /// When the task started, from RoundReport::start, read from the clock that times it
  /// (kUnmeasured only in a record made by hand). With
  /// SchedulerOptions::set_time_chunks(), the tasks of a chunk are laid back to back from
  /// the chunk's start, each lasting the chunk's mean.
  std::chrono::nanoseconds start = kUnmeasured;

  [[nodiscard]] bool has_start() const noexcept { return start != kUnmeasured; }
};

/// The report of one batch, returned with its results.
///
/// @code
/// auto [values, report] = scheduler.run(23, task);
/// double cost = std::chrono::duration<double>(report.worker_time()).count();
/// double share = double(report.overhead().count()) / double(report.wall.count());
/// @endcode
///
/// A plain value type.
struct RoundReport {
  /// The scheduler's batch number, 1-based (what Slowdown::change_at counts).
  std::size_t round = 0;
  /// The shape of the plan the batch ran (Plan::dispatch()).
  Dispatch dispatch = Dispatch::allocated;
  /// Accepted tasks per worker: the policy's allocation in allocated mode, what each worker
  /// contributed in greedy, pull and mixed modes.
  Allocation allocation;
  /// Per worker: the summed duration of every task it ran, discarded ones included.
  std::vector<std::chrono::nanoseconds> busy;
  /// From the call to run() until it returned: the caller's wait, allocation included.
  std::chrono::nanoseconds wall{0};
  /// When the batch was handed to its lanes, after admission and planning: TaskRecord::start
  /// counts from here.
  std::chrono::steady_clock::time_point start;
  /// Every task that ran, by task index; B of them are accepted. Empty with
  /// SchedulerOptions::set_task_records(false) (discarded() is then 0). With
  /// SchedulerOptions::set_time_chunks(), each task of an untracked quota has its chunk's
  /// mean duration. Allocated, pull or mixed batches with backups, retries or restarts
  /// (tracked): tasks[j] is task j's accepted copy (its
  /// worker may differ from the allocation's), and the discarded copies, restarted copies and
  /// failed attempts follow the B of them.
  std::vector<TaskRecord> tasks;
  /// Batches with backups: tasks an idle worker took over from another's share.
  std::size_t takeovers = 0;
  /// Batches with backups (quotas, or an indexed race): backup copies started (of tasks
  /// running past the threshold).
  std::size_t backup_copies = 0;
  /// Batches with retries: failed attempts run again (in a fungible race, replaced by new
  /// tasks).
  std::size_t retries = 0;
  /// Batches whose plan sets restart budgets (Plan::restart_after()): copies stopped at their
  /// worker's budget and started afresh on it (each a discarded record).
  std::size_t restarts = 0;
  /// Set when the policy threw while observing this batch's durations (a bug in a custom
  /// observe() or learn()): the results are still valid and returned; the policy absorbed
  /// the durations (or the workers' summaries) before the failing one and none after.
  /// Rethrow it to fail loudly:
  /// `if (report.learning_error) std::rethrow_exception(report.learning_error);`
  std::exception_ptr learning_error;

  /// Total worker time: the sum of busy, discarded work included (the paper's cost).
  [[nodiscard]] std::chrono::nanoseconds worker_time() const noexcept;
  /// The busiest worker's busy time: the round time an ideal scheduler would need.
  [[nodiscard]] std::chrono::nanoseconds critical_path() const noexcept;
  /// wall - critical_path(): time the scheduler itself added to the round (allocating,
  /// handing over chunks, waking threads, collecting results), never negative.
  [[nodiscard]] std::chrono::nanoseconds overhead() const noexcept;
  /// Tasks that ran but whose results were discarded.
  [[nodiscard]] std::size_t discarded() const noexcept;
};

}  // namespace ata::runtime

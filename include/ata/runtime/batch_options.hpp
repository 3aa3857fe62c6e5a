#pragma once
/// @file
/// Options of a BatchScheduler (backpressure, load awareness, chunk timing) and of one batch
/// (deadline).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ata/core/backup_rule.hpp"
#include "ata/core/error.hpp"

namespace ata::runtime {

/// Backup tasks of allocated batches (ata::BackupRule, the simulator's rule):
enum class Backups : std::uint8_t {
  off,     ///< every task runs where it was allocated, and the batch waits for it
  copies,  ///< a worker done with its share starts backup copies of overdue tasks
  on,      ///< as copies, and it first takes over tasks other shares have not started
};

/// The mode named "off", "copies" or "on" (the apps' --backups); ata::InvalidArgument naming
/// `name` otherwise.
[[nodiscard]] Backups parse_backups(std::string_view name);

/// When an allocated strategy's batch gets its workers:
enum class Binding : std::uint8_t {
  on_arrival,  ///< the policy allocates the whole batch when it is submitted (the paper's)
  late,        ///< each task when a worker becomes free (see SchedulerOptions::set_binding)
};

/// The binding named "arrival" or "late" (ata-serve's --binding); ata::InvalidArgument naming
/// `name` otherwise.
[[nodiscard]] Binding parse_binding(std::string_view name);

/// How a BatchScheduler treats concurrent batches, with fluent setters.
///
/// @code
/// ata::runtime::BatchScheduler scheduler(
///     pool, policy, ata::runtime::SchedulerOptions{}.set_max_in_flight(16).set_load_aware(true));
/// ata::runtime::BatchScheduler resilient(
///     pool, policy, ata::runtime::SchedulerOptions{}.set_backups(ata::runtime::Backups::on)
///                       .set_retries(2));
/// @endcode
///
/// A value type; not synchronised.
class SchedulerOptions {
 public:
  /// The default bound on batches in flight.
  static constexpr std::size_t kDefaultMaxInFlight = 64;

  /// Batches allocated and not yet complete, at most (>= 1, else ata::InvalidArgument). Past
  /// it, run() blocks and async_run() waits asynchronously for a slot, first come first
  /// served, so the memory batches hold stays bounded whatever the request rate.
  SchedulerOptions& set_max_in_flight(std::size_t batches) {
    if (batches == 0) {
      throw InvalidArgument("max_in_flight must be >= 1 (batches in flight), got 0");
    }
    max_in_flight_ = batches;
    return *this;
  }
  /// Whether an allocated batch is allocated against the tasks already queued or running on
  /// each worker (on by default): the policy minimises max_i (q_i + a_i s_i), q_i being
  /// worker i's unfinished tasks of earlier allocated batches times its score. With one batch
  /// at a time every q_i is 0 and the allocation is the plain one.
  SchedulerOptions& set_load_aware(bool on) noexcept {
    load_aware_ = on;
    return *this;
  }

  /// When an allocated strategy's batches get their workers (Binding::on_arrival by
  /// default). With Binding::late, for services where batches overlap, a batch is not
  /// allocated: its tasks wait in one queue the scheduler's batches share, oldest batch
  /// first, and a worker that becomes free takes the first waiting task that the workers
  /// already busy would not reach, by the policy's learned means (Policy::stats()), before it
  /// could finish it; otherwise it waits. A fast worker takes the oldest batch's next task, a
  /// slow one a task far enough back that its slowness costs nothing, and no queue builds up
  /// behind a worker that turned out slow. A worker not yet measured takes a task at once.
  /// Every worker is used when the queue is long, as a pull pool does, and a batch's last
  /// tasks do not land on slow workers, as they do with pull. docs/service.md measures it.
  /// While tasks wait and a worker waits too, a timer looks again at least every millisecond,
  /// so that no task waits forever behind a worker stuck in a long one. The policy learns
  /// from every task's time; its plan() is called, so its rounds count, but the plan's quotas
  /// are not used (report.dispatch is Dispatch::pull, as the tasks were handed out one by one,
  /// and report.allocation counts the tasks each worker ran). Costs a lock per task. A plan
  /// that races (pull, GTA) runs as planned; a BatchScheduler refuses late binding with
  /// backups or retries (ata::InvalidArgument).
  SchedulerOptions& set_binding(Binding binding) noexcept {
    binding_ = binding;
    return *this;
  }

  /// Whether an allocated batch times each worker's chunk as a whole rather than each task
  /// (off by default): one clock read per chunk instead of one per task, and every task of
  /// the chunk is recorded (report.tasks, and for the policy) with the chunk's mean time. The
  /// policy's means stay exact; the spread within a chunk is lost (its variance counts as 0).
  /// For policies that accept summaries: a BatchScheduler given a policy whose
  /// needs_every_sample() is true throws ata::InvalidArgument with this option. Pull and
  /// greedy batches time every task regardless.
  SchedulerOptions& set_time_chunks(bool on) noexcept {
    time_chunks_ = on;
    return *this;
  }

  /// Whether a batch's report lists every task it ran (RoundReport::tasks; on by default).
  /// Off, an allocated batch keeps no per-task record: report.tasks is empty, while the
  /// results, report.allocation, report.busy (so worker_time() and critical_path()) and the
  /// policy's learning (one summary per worker) are unchanged. The records are B writes of
  /// memory the caller allocated: at B = 1024 empty tasks about two thirds of the per-task
  /// cost (docs/runtime.md). Ignored where the scheduler reads the records itself: pull and
  /// greedy batches without backups, and policies whose needs_every_sample() is true.
  SchedulerOptions& set_task_records(bool on) noexcept {
    task_records_ = on;
    return *this;
  }

  /// Backup tasks in allocated batches (Backups::off by default; docs/stragglers.md measures
  /// why). A worker that has finished its share while the batch still waits takes over tasks
  /// other shares have not started (Backups::on), then, once a running task has run
  /// backup_threshold() x its worker's learned mean, runs a backup copy of it, at most
  /// backup_copies() copies per task at once. The first copy to finish gives the task's
  /// result; the others get a stop request (TaskContext::stop_requested()), their results
  /// are discarded and their time counts as worker time (report.tasks: accepted = false),
  /// and the policy hears Policy::observe_censored() for them. With backups (or retries),
  /// allocated batches time every task, whatever set_time_chunks() says, and a worker whose
  /// task has run stuck_after() x its mean is quarantined (see Lanes::stuck_lanes()). In an
  /// indexed race (Dispatch::pull), a racer free once every index is claimed runs backup
  /// copies the same way. The default for batches whose plan leaves Plan::hedging() unset: a
  /// plan's own hedging overrides it.
  SchedulerOptions& set_backups(Backups mode) noexcept {
    backups_ = mode;
    return *this;
  }
  /// The multiple of a worker's learned mean past which its running task earns a backup copy
  /// (> 1, else ata::InvalidArgument; 4 by default, as ata-sim). +inf, or a multiple so large
  /// that the wait is beyond the clock's range, means no backup copy is ever due.
  SchedulerOptions& set_backup_threshold(double multiple);
  /// Copies of one task running at once, the original included (>= 1, else
  /// ata::InvalidArgument; 2 by default).
  SchedulerOptions& set_backup_copies(std::size_t copies);
  /// No backup copy of a task that has run less than this (>= 0, else ata::InvalidArgument;
  /// 1 ms by default): below the scheduler's own latency (waking a lane, a timer), a copy
  /// costs more than it can save, and tasks of microseconds pass any multiple of their mean
  /// by mere jitter. nanoseconds::max() means no backup copy is ever due.
  SchedulerOptions& set_backup_min_overdue(std::chrono::nanoseconds after);
  /// The multiple of a worker's learned mean past which a task still running marks the worker
  /// stuck (> 1, else ata::InvalidArgument, NaN included; 16 by default): allocation skips it
  /// until the task returns. Applies with backups or retries on. +inf (or a multiple so large
  /// that the moment is beyond the clock's range) means never: no worker is quarantined.
  SchedulerOptions& set_stuck_after(double multiple);
  /// How often a task of an allocated batch that throws is run again, on another worker
  /// where there is one, before the batch fails with its last exception (0 by default: the
  /// first exception fails the batch). A failed attempt's time counts as worker time; the
  /// policy does not learn from it (a failure says nothing of the worker's speed). The
  /// default for batches whose plan leaves Plan::retries() unset.
  SchedulerOptions& set_retries(std::size_t retries) noexcept {
    retries_ = retries;
    return *this;
  }

  [[nodiscard]] std::size_t max_in_flight() const noexcept { return max_in_flight_; }
  [[nodiscard]] bool load_aware() const noexcept { return load_aware_; }
  [[nodiscard]] bool time_chunks() const noexcept { return time_chunks_; }
  [[nodiscard]] Binding binding() const noexcept { return binding_; }
  [[nodiscard]] bool task_records() const noexcept { return task_records_; }
  [[nodiscard]] Backups backups() const noexcept { return backups_; }
  [[nodiscard]] double backup_threshold() const noexcept { return backup_threshold_; }
  [[nodiscard]] std::size_t backup_copies() const noexcept { return backup_copies_; }
  [[nodiscard]] std::chrono::nanoseconds backup_min_overdue() const noexcept {
    return backup_min_overdue_;
  }
  [[nodiscard]] double stuck_after() const noexcept { return stuck_after_; }
  [[nodiscard]] std::size_t retries() const noexcept { return retries_; }
  /// The rule's settings these options give.
  [[nodiscard]] BackupOptions backup_options() const noexcept {
    return BackupOptions{}
        .set_enabled(backups_ != Backups::off)
        .set_take_overs(backups_ == Backups::on)
        .set_threshold_multiple(backup_threshold_)
        .set_max_copies(backup_copies_)
        .set_min_overdue(std::chrono::duration<double>(backup_min_overdue_).count());
  }

 private:
  std::size_t max_in_flight_ = kDefaultMaxInFlight;
  bool load_aware_ = true;
  bool time_chunks_ = false;
  Binding binding_ = Binding::on_arrival;
  bool task_records_ = true;
  Backups backups_ = Backups::off;
  double backup_threshold_ = 4.0;
  std::size_t backup_copies_ = 2;
  std::chrono::nanoseconds backup_min_overdue_ = std::chrono::milliseconds(1);
  double stuck_after_ = 16.0;
  std::size_t retries_ = 0;
};

/// Options of one batch.
struct BatchOptions {
  /// Measured from the call. Zero: none; negative: refused by run() and async_run()
  /// (ata::InvalidArgument naming it); one past the clock's range (nanoseconds::max()): none.
  /// Past it, the batch's running tasks get a stop
  /// request, its queued chunks are skipped, and it fails: run() throws DeadlineError,
  /// async_run() completes with boost::asio::error::timed_out. A batch whose B results are
  /// all in by then succeeds. The policy learns nothing from a batch that timed out or was
  /// cancelled: the tasks that had finished are the fast ones, a biased sample.
  std::chrono::nanoseconds deadline{0};
};

/// What run() throws when a batch's deadline passes first.
class DeadlineError : public Error {
 public:
  using Error::Error;
};

}  // namespace ata::runtime

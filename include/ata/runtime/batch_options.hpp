#pragma once
/// @file
/// Options of a BatchScheduler (backpressure, load awareness, chunk timing, backups, retries;
/// binding on arrival or late) and of one batch (deadline).

#include <chrono>
#include <cstddef>
#include <cstdint>

#include "ata/core/backup_rule.hpp"
#include "ata/core/error.hpp"

namespace ata::runtime {

/// How a BatchScheduler that binds each batch when it arrives (the paper's way, the default)
/// treats its batches, with fluent setters. For late binding, see LateBindingOptions: a type
/// of its own, as it runs none of the settings below but max_in_flight and task_records.
///
/// @code
/// ata::runtime::BatchScheduler scheduler(
///     pool, policy, ata::runtime::SchedulerOptions{}.set_max_in_flight(16).set_load_aware(true));
/// ata::runtime::BatchScheduler resilient(
///     pool, policy,
///     ata::runtime::SchedulerOptions{}
///         .set_backups(ata::BackupOptions{}.set_mode(ata::BackupMode::on))
///         .set_retries(2));
/// @endcode
///
/// What each setting does with each kind of plan is one table in docs/runtime.md ("Options").
/// A value type; not synchronised.
class SchedulerOptions {
 public:
  /// The default bound on batches in flight.
  static constexpr std::size_t kDefaultMaxInFlight = 64;
  /// A backup copy's least running time on threads when BackupOptions::min_overdue is unset:
  /// below the scheduler's own latency (waking a lane, a timer), a copy costs more than it
  /// can save, and tasks of microseconds pass any multiple of their mean by mere jitter.
  static constexpr std::chrono::nanoseconds kDefaultMinOverdue = std::chrono::milliseconds(1);

  /// Batches allocated and not yet complete, at most (>= 1, else ata::InvalidArgument). Past
  /// it, run() blocks and async_run() waits asynchronously for a slot, first come first
  /// served, so the memory batches hold stays bounded whatever the request rate.
  SchedulerOptions& set_max_in_flight(std::size_t batches);
  /// Whether a batch is planned against the tasks already queued or running on each worker (on
  /// by default): the policy minimises max_i (q_i + a_i s_i), q_i being worker i's unfinished
  /// tasks of earlier allocated batches times its score. With one batch at a time every q_i
  /// is 0 and the allocation is the plain one. A policy that ignores backlogs (UTA, the
  /// racing ones) plans the same either way.
  SchedulerOptions& set_load_aware(bool on) noexcept {
    load_aware_ = on;
    return *this;
  }

  /// Whether a lane times each chunk it runs as a whole rather than each task (off by
  /// default): one clock read per chunk instead of one per task, and every task of the chunk
  /// is recorded (report.tasks, and for the policy) with the chunk's mean time. The policy's
  /// means stay exact; the spread within a chunk is lost (its variance counts as 0, also for a
  /// policy whose needs_every_sample() is true: it observes each task with its chunk's mean).
  /// A chunk is what a lane runs without coming back to the scheduler: a quota's tasks in an
  /// untracked batch; one task wherever tasks are handed out one by one (races, and tracked
  /// batches: backups, retries, restart budgets), which are then timed task by task.
  SchedulerOptions& set_time_chunks(bool on) noexcept {
    time_chunks_ = on;
    return *this;
  }

  /// Whether a batch's report lists every task it ran (RoundReport::tasks; on by default).
  /// Off, report.tasks is empty, while the results, report.allocation, report.busy (so
  /// worker_time() and critical_path()) and the policy's learning are unchanged. In a batch of
  /// quotas (with backups or without) whose policy learns from summaries, no record is even
  /// written: at B = 1024 empty tasks that saves about two thirds of the per-task cost
  /// (docs/runtime.md); elsewhere the scheduler reads the records itself and drops them from
  /// the report after learning.
  SchedulerOptions& set_task_records(bool on) noexcept {
    task_records_ = on;
    return *this;
  }

  /// Backup tasks (the hedging of batches whose plan leaves Plan::backups() unset; a plan's
  /// own overrides it). BackupMode::copies by default, as in ata-sim: a task stuck on one
  /// worker no longer holds its batch, for about a tenth more per task than none on empty
  /// tasks (docs/runtime.md); BackupMode::off is the paper's model.
  /// BackupMode::copies: once a running task has run options.threshold_multiple x its
  /// worker's learned mean (and at least options.min_overdue seconds, kDefaultMinOverdue when
  /// unset), a free worker runs a backup copy of it, at most options.max_copies copies per
  /// task at once. BackupMode::on: a free worker first takes over tasks other shares have
  /// not started. A free worker is a quota worker done with its share, or a racer of an
  /// indexed race once every index is claimed. The first copy to finish gives the task's
  /// result; the others get a stop request (TaskContext::stop_requested()), their results are
  /// discarded and their time counts as worker time (report.tasks: accepted = false), and the
  /// policy hears Policy::observe_censored() for them. A fungible race (GTA, race:M) has no
  /// task to back up: its racers compute until any B results are in, which is what backups
  /// would do. Throws ata::InvalidArgument for settings ata::BackupRule refuses.
  SchedulerOptions& set_backups(const BackupOptions& options);
  /// The multiple of a worker's learned mean past which a task of a tracked batch (backups,
  /// retries or restart budgets, the scheduler's or the plan's) still running marks the
  /// worker stuck (> 1, else ata::InvalidArgument, NaN included; 16 by default), and never
  /// sooner than a copy earns a backup (BackupOptions::min_overdue, kDefaultMinOverdue
  /// unless set): allocation skips it until the task returns. +inf (or a multiple so large that the
  /// moment is beyond the clock's range) means never: no worker is quarantined. Untracked batches
  /// do not watch their running tasks, so they mark no worker stuck themselves; their plans do
  /// avoid the workers tracked batches marked.
  SchedulerOptions& set_stuck_after(double multiple);
  /// How often a task that throws is run again, on another worker where there is one, before
  /// the batch fails with its last exception (0 by default: the first exception fails the
  /// batch); the default for batches whose plan leaves Plan::retries() unset. In a fungible
  /// race the B results are interchangeable: the batch fails at the (retries x B + 1)-th
  /// failed attempt, every earlier one being replaced by a new task. A failed attempt's time
  /// counts as worker time; the policy does not learn from it (a failure says nothing of the
  /// worker's speed).
  SchedulerOptions& set_retries(std::size_t retries) noexcept {
    retries_ = retries;
    return *this;
  }

  [[nodiscard]] std::size_t max_in_flight() const noexcept { return max_in_flight_; }
  [[nodiscard]] bool load_aware() const noexcept { return load_aware_; }
  [[nodiscard]] bool time_chunks() const noexcept { return time_chunks_; }
  [[nodiscard]] bool task_records() const noexcept { return task_records_; }
  /// As set (min_overdue unset unless set_backups() set it).
  [[nodiscard]] const BackupOptions& backups() const noexcept { return backups_; }
  [[nodiscard]] double stuck_after() const noexcept { return stuck_after_; }
  [[nodiscard]] std::size_t retries() const noexcept { return retries_; }

 private:
  std::size_t max_in_flight_ = kDefaultMaxInFlight;
  bool load_aware_ = true;
  bool time_chunks_ = false;
  bool task_records_ = true;
  BackupOptions backups_ = BackupOptions{}.set_mode(BackupMode::copies);
  double stuck_after_ = 16.0;
  std::size_t retries_ = 0;
};

/// How a BatchScheduler with late binding treats its batches. A quota plan's batch is not
/// allocated: its tasks wait in one queue the scheduler's batches share, oldest batch first,
/// and a worker that becomes free takes the first waiting task that the workers already busy
/// would not reach, by the policy's learned means (Policy::stats()), before it could finish
/// it; otherwise it waits. A fast worker takes the oldest batch's next task, a slow one a task
/// far enough back that its slowness costs nothing, and no queue builds up behind a worker
/// that turned out slow. A worker not yet measured takes a task at once. Every worker is used
/// when the queue is long, as a pull pool does, and a batch's last tasks do not land on slow
/// workers, as they do with pull. docs/service.md measures it. While tasks wait and a worker
/// waits too, a timer looks again at least every millisecond, so that no task waits forever
/// behind a worker stuck in a long one. The policy learns from every task's time; its plan()
/// is called for every batch, so its rounds count (report.dispatch is Dispatch::pull, as the
/// tasks were handed out one by one, and report.allocation counts the tasks each worker ran).
/// Costs a lock per task.
///
/// Batches the queue cannot run bind on arrival instead, as SchedulerOptions{} with these
/// max_in_flight and task_records and no backups would: a plan that races (pull, GTA) runs
/// as planned, and so does a plan with backups, retries or restart budgets of its own. There are no backups,
/// retries, chunk timing or load awareness to set: the queue runs none of them (load
/// awareness is what it does by nature), so the type has no setter for them.
///
/// @code
/// ata::runtime::BatchScheduler service(pool, policy,
///                                      ata::runtime::LateBindingOptions{}.set_max_in_flight(16));
/// @endcode
class LateBindingOptions {
 public:
  /// As SchedulerOptions::set_max_in_flight().
  LateBindingOptions& set_max_in_flight(std::size_t batches) {
    options_.set_max_in_flight(batches);
    return *this;
  }
  /// As SchedulerOptions::set_task_records().
  LateBindingOptions& set_task_records(bool on) noexcept {
    options_.set_task_records(on);
    return *this;
  }
  [[nodiscard]] std::size_t max_in_flight() const noexcept { return options_.max_in_flight(); }
  [[nodiscard]] bool task_records() const noexcept { return options_.task_records(); }
  /// The options of the batches that bind on arrival: these settings, the rest as
  /// SchedulerOptions{} but without backups (late binding runs none but a plan's own) and not
  /// load-aware (the queue is; plans are made without backlogs).
  [[nodiscard]] SchedulerOptions on_arrival() const noexcept {
    return SchedulerOptions(options_).set_backups(BackupOptions{}).set_load_aware(false);
  }

 private:
  SchedulerOptions options_;
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

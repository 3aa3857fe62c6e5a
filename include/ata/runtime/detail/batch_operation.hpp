#pragma once
/// @file
/// Machinery behind BatchScheduler::run() and ata::runtime::async_run(): one batch driven from
/// admission to its result, whatever waits for it. Not part of the API.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <utility>
#include <vector>

#include "ata/core/plan.hpp"
#include "ata/runtime/batch_options.hpp"
#include "ata/runtime/detail/task_body.hpp"
#include "ata/runtime/observer.hpp"
#include "ata/runtime/round_report.hpp"

namespace ata::runtime {
class BatchScheduler;
}

namespace ata::runtime::detail {

class Batch;
class Lane;
class OperationBatch;

/// A blocking caller that waits for its batch. It runs the batch's timer while it waits (a
/// timer thread would take a core from the lanes to wake, and a futex call, batch after
/// batch), and the caller lane's part of the batch (CallerLanePool): the batch summons it,
/// as it would queue a lane again, to run a backup copy.
class CallerWaiter {
 public:
  /// Wakes the waiting caller to run its part of the batch again. Called under the batch's
  /// lock, while the batch is not yet complete; must not block or throw.
  virtual void summon_caller() noexcept = 0;
  /// Asks the waiting caller to call batch.on_timer() once `when` has come, in place of any
  /// moment asked before (time_point::max(): none). Called under the batch's lock, while the
  /// batch is not yet complete; must not block or throw.
  virtual void wake_at(Batch& batch, std::chrono::steady_clock::time_point when) noexcept = 0;

 protected:
  ~CallerWaiter() = default;
};

/// What an operation keeps for the next batches of its scheduler (SchedulerEngine::kept),
/// each a few allocations per batch otherwise: its plan, a blocking caller's lane, and its
/// batch's stop source if it was never requested (Batch::take_stop()).
struct KeptStorage {
  Plan plan;
  std::unique_ptr<Lane> caller_lane;
  std::stop_source stop{std::nostopstate};
};

/// How a batch ended.
enum class BatchStatus : std::uint8_t {
  succeeded,  ///< B results: finish() filled the report and the slot order
  failed,     ///< finish() gave the exception (a task's, ShutdownError, ata::Error)
  cancelled,  ///< cancel() came first
  timed_out,  ///< its deadline passed first
};

/// One batch from admission to completion. The blocking and the asynchronous front ends
/// derive from it: the engine is this class and Batch under it, written once.
///
/// Life: a slot of the scheduler's in-flight bound is taken (run_blocking() waits for one;
/// start_async() queues and is told through on_admitted()), the batch is allocated and
/// submitted, and on_finished() is called exactly once, when the outcome is final and no
/// worker will touch the task body again. finish() then gives the results or the error.
/// Owned by a std::shared_ptr (the engine's callbacks hold references).
class BatchOperation : public std::enable_shared_from_this<BatchOperation> {
 public:
  BatchOperation(const BatchOperation&) = delete;
  BatchOperation& operator=(const BatchOperation&) = delete;
  virtual ~BatchOperation();

  /// Ends the batch early, from any thread, any number of times: a queued batch leaves the
  /// queue, a running one has its running tasks stopped and its queued chunks skipped. The
  /// status is then `reason` (cancelled or timed_out), unless the outcome was already final or
  /// the B results were already in.
  void cancel(BatchStatus reason) noexcept;

 protected:
  /// `body` is only stored: it may be a member of the derived class, constructed later, and
  /// must stay alive until on_finished() has been called. With `owner` (which owns `body`),
  /// an allocated batch with backups or retries finishes as soon as every task index has a
  /// result, and the batch keeps `owner` until its late copies have ended.
  BatchOperation(BatchScheduler& scheduler, std::size_t batch, TaskBody& body,
                 const BatchOptions& options, std::shared_ptr<void> owner = nullptr);

  /// Blocking front end: waits for a slot and submits the batch; on_finished() follows,
  /// possibly from within this call. Throws ata::Error on one of the pool's own workers (it
  /// would wait for itself).
  void start_blocking();
  /// Asynchronous front end: takes a slot and submits now, or queues for a slot; either way
  /// on_finished() follows, possibly from within this call.
  void start_async() noexcept;
  /// Asynchronous front end, after on_admitted(): allocates and submits the batch.
  void launch() noexcept;
  /// Asynchronous front end, instead of launch(): the step that would have called it was
  /// destroyed unrun (an io_context destroyed with it queued). Gives the slot back; the
  /// operation ends as failed without on_finished(), whose handler went with its executor.
  void drop_launch() noexcept;

  /// A queued asynchronous batch now holds a slot: the front end must call launch() soon
  /// (posting it to its executor). Called on the thread that freed the slot; must not throw.
  virtual void on_admitted() noexcept {}
  /// The outcome is final and the task body is no longer used. Called exactly once, on a
  /// worker, on the thread that cancelled or launched, or on the deadline timer's; must not
  /// block or throw.
  virtual void on_finished() noexcept = 0;

  [[nodiscard]] std::size_t batch_size() const noexcept { return batch_; }
  [[nodiscard]] const BatchOptions& options() const noexcept { return options_; }
  /// How long a waiter polls before sleeping: the pool's idle spin.
  [[nodiscard]] std::chrono::nanoseconds idle_spin() const;

  /// Blocking front end: the caller that waits for this batch, to be summoned; nullptr for an
  /// asynchronous one. Read by submit_now().
  virtual CallerWaiter* caller_waiter() noexcept { return nullptr; }
  /// Blocking front end, after start_blocking(): whether the plan gives the caller lane
  /// (CallerLanePool) a part of the batch; run_caller_share() runs it on the calling thread
  /// (again when summoned), on a Lane of its own, so that concurrent callers share no stuck
  /// mark or backlog; drop_caller_share() lets the batch go once finished.
  [[nodiscard]] bool has_caller_share() const noexcept { return caller_share_ != nullptr; }
  void run_caller_share() noexcept;
  void drop_caller_share() noexcept;

  /// After on_finished(): the status; on success the report and slot order are filled and
  /// the policy has observed the durations (a failure to observe is report.learning_error);
  /// on failure `error` holds the exception.
  BatchStatus finish(RoundReport& report, std::vector<std::size_t>& slot_order,
                     std::exception_ptr& error);

 private:
  friend class OperationBatch;
  enum class Stage : std::uint8_t { created, queued, admitted, running, finished };

  void admitted_from_queue() noexcept;
  void submit_now();
  void batch_completed(Batch& batch) noexcept;
  // Ends a batch that was never submitted (or whose submission failed).
  void finish_unsubmitted(BatchStatus status, std::exception_ptr error, bool holds_slot) noexcept;
  void arm_deadline();
  void disarm_deadline() noexcept;
  // Tells the observer told of this batch's start, if any, how it ended.
  void notify_end(BatchOutcome outcome, const RoundReport* report) const noexcept;

  BatchScheduler& scheduler_;
  const std::size_t batch_;
  TaskBody& body_;
  std::shared_ptr<void> owner_;  // handed to the batch when submitted
  const BatchOptions options_;
  const std::chrono::steady_clock::time_point start_;

  std::mutex mutex_;
  Stage stage_ = Stage::created;           // guarded by mutex_
  std::uint64_t ticket_ = 0;               // guarded by mutex_: while Stage::queued
  std::optional<BatchStatus> requested_;   // guarded by mutex_: an early end asked for
  std::shared_ptr<Batch> running_;         // guarded by mutex_: submitted, not complete
  std::optional<std::uint64_t> deadline_;  // guarded by mutex_
  // The blocking front end's caller waits, so it may run the caller lane's part
  // (caller_share_, set by submit_now() on the same thread); an asynchronous one's does not.
  bool blocking_ = false;
  std::shared_ptr<Batch> caller_share_;
  // Taken from the scheduler by submit_now() and given back by finish(), under the policy's
  // mutex.
  KeptStorage kept_;

  // Written once before on_finished(), read after it.
  BatchStatus status_ = BatchStatus::failed;
  std::exception_ptr error_;
  std::size_t round_ = 0;
  bool observe_every_task_ = false;  // the policy's needs_every_sample(), read at the plan
  std::shared_ptr<Batch> completed_;
  Observer* observer_ = nullptr;  // set when told of the start: it is told of the end
};

/// The front end of BatchScheduler::run(): the caller's thread waits.
class BlockingOperation final : public BatchOperation, public CallerWaiter {
 public:
  BlockingOperation(BatchScheduler& scheduler, std::size_t batch, TaskBody& body,
                    const BatchOptions& options, std::shared_ptr<void> owner = nullptr)
      : BatchOperation(scheduler, batch, body, options, std::move(owner)) {}

  /// Runs the batch; on success fills the report and the slot order, else throws what
  /// BatchScheduler::run() documents.
  void run(RoundReport& report, std::vector<std::size_t>& slot_order);

 private:
  using Clock = std::chrono::steady_clock;
  static constexpr Clock::rep kNoTimer = Clock::time_point::max().time_since_epoch().count();

  void on_finished() noexcept override;
  CallerWaiter* caller_waiter() noexcept override { return this; }
  void summon_caller() noexcept override;
  void wake_at(Batch& batch, Clock::time_point when) noexcept override;
  // Waits until `ready()`: polls for the pool's idle spin, then sleeps on finished_; runs the
  // batch's timer whenever its moment comes meanwhile.
  template <class Ready>
  void wait(Ready ready, std::chrono::nanoseconds spin);
  // Whether the timer's moment `at` (kNoTimer: none) has come; reads the clock only if set.
  [[nodiscard]] static bool due(Clock::rep at) noexcept {
    return at != kNoTimer && at <= Clock::now().time_since_epoch().count();
  }
  // Takes the timer's moment if it has come (once: a later wake_at() may set another).
  [[nodiscard]] Batch* take_due_timer() noexcept;

  // The waiter polls done_ (and summoned_, and the timer), then sleeps on finished_;
  // on_finished(), summon_caller() and wake_at() notify under mutex_, so the wake-up cannot
  // slip between check and sleep.
  std::atomic<bool> done_{false};
  std::atomic<bool> summoned_{false};
  std::atomic<Clock::rep> timer_at_{kNoTimer};  // wake_at()'s moment, since the clock's epoch
  std::atomic<Batch*> timed_{nullptr};          // wake_at()'s batch, published by timer_at_
  std::mutex mutex_;
  std::condition_variable finished_;
};

}  // namespace ata::runtime::detail

#pragma once
/// @file
/// Batches as Asio asynchronous operations: async_run() follows Asio's completion-token
/// conventions (a completion handler, use_future, use_awaitable, deferred, ...), over the same
/// engine as the blocking BatchScheduler::run(). Needs Boost.Asio (1.81 or later); the rest of
/// the library does not.

#include <utility>  // before Asio: g++ 12's libstdc++ needs it for Asio's headers

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/system/system_error.hpp>
#include <atomic>
#include <concepts>
#include <cstddef>
#include <exception>
#include <memory>
#include <optional>
#include <type_traits>
#include <vector>

#include "ata/runtime/batch_options.hpp"
#include "ata/runtime/batch_scheduler.hpp"
#include "ata/runtime/detail/batch_operation.hpp"

namespace ata::runtime {

namespace detail {

/// One asynchronous batch: owns the task and the handler until the handler has run.
template <class Task, class Handler>
class AsyncOperation final : public BatchOperation {
 public:
  using Result = TaskResult<Task>;

  AsyncOperation(BatchScheduler& scheduler, std::size_t batch, Task task,
                 const BatchOptions& options, Handler handler)
      : BatchOperation(scheduler, batch, body_, options),
        task_(std::move(task)),
        body_(task_, batch, scheduler.lanes().size()),
        handler_(std::move(handler)),
        work_(boost::asio::make_work_guard(boost::asio::get_associated_executor(handler_))) {}

  void start() noexcept {
    auto slot = boost::asio::get_associated_cancellation_slot(handler_);
    if (slot.is_connected()) {
      // Any cancellation type ends the batch: its side effects (tasks already run) are the
      // caller's own and the policy learns nothing from it.
      slot.assign([weak = std::weak_ptr<BatchOperation>(shared_from_this())](
                      boost::asio::cancellation_type type) {
        if (type == boost::asio::cancellation_type::none) return;
        if (const auto self = weak.lock()) self->cancel(BatchStatus::cancelled);
      });
    }
    start_async();
  }

 private:
  void on_admitted() noexcept override {
    // Destroyed unrun (an io_context destroyed with it queued), the launch gives its slot
    // back: the scheduler's later batches would otherwise wait for it forever.
    post_to_handler([](AsyncOperation& self) { self.launch(); },
                    [](AsyncOperation& self) { self.drop_launch(); });
  }
  void on_finished() noexcept override {
    post_to_handler([](AsyncOperation& self) { self.complete(); },
                    [](AsyncOperation&) {});  // the handler goes with its executor
  }

  // One posted step, shared by the copies an executor makes: runs `step` once, or `dropped`
  // if every copy is destroyed unrun.
  template <class Step, class Dropped>
  class PostedStep {
   public:
    PostedStep(std::shared_ptr<AsyncOperation> self, Step step, Dropped dropped,
               std::shared_ptr<std::atomic<bool>> gate)
        : self_(std::move(self)), step_(step), dropped_(dropped), gate_(std::move(gate)) {}
    PostedStep(const PostedStep&) = delete;
    PostedStep& operator=(const PostedStep&) = delete;
    ~PostedStep() {
      if (!ran_.exchange(true, std::memory_order_acq_rel)) dropped_(*self_);
    }
    void operator()() noexcept {
      gate_->wait(false, std::memory_order_acquire);
      if (!ran_.exchange(true, std::memory_order_acq_rel)) step_(*self_);
    }

   private:
    const std::shared_ptr<AsyncOperation> self_;
    Step step_;
    Dropped dropped_;
    const std::shared_ptr<std::atomic<bool>> gate_;  // open once the poster is out of post()
    std::atomic<bool> ran_{false};
  };

  // Runs `step` on the handler's associated executor, never inline; `dropped` instead if the
  // executor destroys the step unrun.
  template <class Step, class Dropped>
  void post_to_handler(Step step, Dropped dropped) noexcept {
    // The step waits until this thread (a worker) is out of post(): else the executor's thread
    // could run it, complete the handler, and let its owner destroy the executor's context (an
    // io_context, a strand's service) while this thread still wakes it up or drops its last
    // reference to a strand. A work guard held across the post covers the first, not the
    // second: its executor, the strand, outlives its on_work_finished().
    const auto gate = std::make_shared<std::atomic<bool>>(false);
    std::shared_ptr<PostedStep<Step, Dropped>> posted;
    try {
      posted = std::make_shared<PostedStep<Step, Dropped>>(
          std::static_pointer_cast<AsyncOperation>(shared_from_this()), step, dropped, gate);
      boost::asio::post(work_.get_executor(), [posted] { (*posted)(); });
      posted.reset();
    } catch (...) {
      // Posting allocates; without memory there is no thread to complete on. Completing here
      // keeps the promise that every operation completes, if not that it never runs inline.
      gate->store(true, std::memory_order_release);
      if (posted) {
        (*posted)();
      } else {
        step(*this);
      }
      return;
    }
    gate->store(true, std::memory_order_release);
    gate->notify_one();
  }

  void complete() noexcept {
    auto slot = boost::asio::get_associated_cancellation_slot(handler_);
    if (slot.is_connected()) slot.clear();
    std::exception_ptr error;
    BatchResult<Result> result{};
    try {
      std::vector<std::size_t> slot_order;
      switch (finish(result.report, slot_order, error)) {
        case BatchStatus::succeeded:
          if constexpr (!std::is_void_v<Result>) result.values = body_.take(slot_order);
          break;
        case BatchStatus::failed:
          break;
        case BatchStatus::cancelled:
          error = std::make_exception_ptr(
              boost::system::system_error(boost::asio::error::operation_aborted));
          break;
        case BatchStatus::timed_out:
          error =
              std::make_exception_ptr(boost::system::system_error(boost::asio::error::timed_out));
          break;
      }
    } catch (...) {
      error = std::current_exception();
      result = BatchResult<Result>{};
    }
    // Moved out first: the handler may start the next batch, or destroy what this one borrows.
    auto handler = std::move(handler_);
    auto work = std::move(work_);
    std::move(handler)(std::move(error), std::move(result));
  }

  Task task_;
  TypedTaskBody<Task, Result> body_;
  Handler handler_;
  boost::asio::executor_work_guard<boost::asio::associated_executor_t<Handler>> work_;
};

/// The initiation of async_run(): validates, then starts the operation. An invalid B
/// completes the operation with ata::InvalidArgument through the handler's executor.
struct InitiateAsyncRun {
  template <class Handler, class Task>
  void operator()(Handler&& handler, BatchScheduler* scheduler, std::size_t batch, Task&& task,
                  const BatchOptions& options) const {
    using Decayed = std::decay_t<Task>;
    using H = std::decay_t<Handler>;
    try {
      BatchScheduler::check_batch(batch, options);
    } catch (...) {
      auto executor = boost::asio::get_associated_executor(handler);
      boost::asio::post(executor, [handler = std::forward<Handler>(handler),
                                   error = std::current_exception()]() mutable {
        std::move(handler)(error, BatchResult<TaskResult<Decayed>>{});
      });
      return;
    }
    auto operation = std::make_shared<AsyncOperation<Decayed, H>>(
        *scheduler, batch, std::forward<Task>(task), options, std::forward<Handler>(handler));
    operation->start();
  }
};

}  // namespace detail

/// Runs B = `batch` tasks as scheduler.run() does, asynchronously, and completes with
/// void(std::exception_ptr, BatchResult<TaskResult<Task>>).
///
/// @code
/// boost::asio::io_context io;
/// boost::asio::co_spawn(io, [&]() -> boost::asio::awaitable<void> {
///   auto [values, report] = co_await ata::runtime::async_run(
///       scheduler, 16, [](const ata::runtime::TaskContext& ctx) { return ctx.task(); },
///       boost::asio::use_awaitable);
/// }, boost::asio::detached);
/// io.run();
/// @endcode
///
/// - The exception is null on success; else a task's exception, ShutdownError, ata::Error (a
///   bad allocation from the policy, out of memory), ata::InvalidArgument (B = 0 or above
///   BatchScheduler::kMaxBatch), or boost::system::system_error with
///   boost::asio::error::operation_aborted (cancelled through the token's cancellation slot:
///   any cancellation type) or boost::asio::error::timed_out (options.deadline passed first).
///   use_future and use_awaitable turn it into a thrown exception.
/// - `task` is decay-copied and kept alive until the handler has run; nothing the caller
///   owns is borrowed. It runs on the pool's workers, concurrently.
/// - The handler runs through its associated executor (the system executor if it has none),
///   never inside async_run() and never on a worker unless that is its executor. The
///   executor counts the batch as outstanding work, so an io_context's run() does not return
///   while one is in flight.
/// - Past the scheduler's in-flight bound (SchedulerOptions::set_max_in_flight), the batch
///   waits for a slot without blocking anyone; a cancellation takes it out of the queue.
/// - A cancelled or timed-out batch has its running tasks stopped (TaskContext's stop token)
///   and its queued chunks skipped; the policy learns nothing from it. One whose B results
///   are in before the cancellation succeeds.
///
/// Thread-safety: may be called from any thread, including the pool's workers (it never
/// waits), any number of times at once. The scheduler must outlive the operation. Only a
/// failure to allocate the operation itself (its result slots) is thrown by async_run().
template <class Task, class CompletionToken>
requires std::invocable < std::decay_t<Task>
&, const TaskContext& > auto async_run(BatchScheduler& scheduler, std::size_t batch, Task&& task,
                                       const BatchOptions& options, CompletionToken&& token) {
  using Result = TaskResult<std::decay_t<Task>>;
  static_assert(
      std::is_void_v<Result> || (std::is_object_v<Result> && std::is_move_constructible_v<Result>),
      "a task returns void or a movable value (not a reference)");
  return boost::asio::async_initiate<CompletionToken,
                                     void(std::exception_ptr, BatchResult<Result>)>(
      detail::InitiateAsyncRun{}, token, &scheduler, batch, std::forward<Task>(task), options);
}

/// async_run() without a deadline.
template <class Task, class CompletionToken>
requires std::invocable < std::decay_t<Task>
&, const TaskContext& > auto async_run(BatchScheduler& scheduler, std::size_t batch, Task&& task,
                                       CompletionToken&& token) {
  return async_run(scheduler, batch, std::forward<Task>(task), BatchOptions{},
                   std::forward<CompletionToken>(token));
}

}  // namespace ata::runtime

#pragma once
/// @file
/// Batches as Asio asynchronous operations: async_run() follows Asio's completion-token
/// conventions (a handler, use_future, use_awaitable, deferred).
///
/// PROVISIONAL: a stand-in with the final signature, so that ata-serve and ata-load can be
/// built before the runtime's asynchronous engine lands. Each batch runs the blocking
/// BatchScheduler::run() on a thread of its own; a cancellation or a missed deadline is noticed
/// only when that run returns (the batch runs to its end, and the policy learns from all of it);
/// there is no bound on batches in flight. The real engine replaces this whole file.

#include <utility>  // before Asio: g++ 12's libstdc++ needs it for Asio's headers

#include <atomic>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/system/system_error.hpp>
#include <chrono>
#include <concepts>
#include <cstddef>
#include <exception>
#include <memory>
#include <thread>
#include <type_traits>

#include "ata/runtime/batch_scheduler.hpp"

namespace ata::runtime {

/// Per-batch options of async_run().
struct BatchOptions {
  /// Zero: none. Past it the batch's tasks get a stop request and the operation completes
  /// with boost::asio::error::timed_out.
  std::chrono::nanoseconds deadline{0};
};

namespace detail {

template <class Task, class Handler>
void start_thread_batch(BatchScheduler& scheduler, std::size_t batch, Task task,
                        BatchOptions options, Handler handler) {
  using Result = BatchResult<TaskResult<Task>>;
  auto executor = boost::asio::get_associated_executor(handler);
  auto work = boost::asio::make_work_guard(executor);
  auto slot = boost::asio::get_associated_cancellation_slot(handler);
  auto cancelled = std::make_shared<std::atomic<bool>>(false);
  if (slot.is_connected()) {
    slot.assign([cancelled](boost::asio::cancellation_type type) {
      if (type != boost::asio::cancellation_type::none) cancelled->store(true);
    });
  }
  std::thread([&scheduler, batch, task = std::move(task), options, handler = std::move(handler),
               executor, work = std::move(work), slot, cancelled]() mutable {
    std::exception_ptr error;
    Result result{};
    {
      // Destroyed before the work guard is released: once it is, the io_context may return.
      auto owned_task = std::move(task);
      const auto start = std::chrono::steady_clock::now();
      try {
        result = scheduler.run(batch, owned_task);
      } catch (...) {
        error = std::current_exception();
      }
      if (!error && cancelled->load()) {
        error = std::make_exception_ptr(
            boost::system::system_error(boost::asio::error::operation_aborted));
      } else if (!error && options.deadline.count() > 0 &&
                 std::chrono::steady_clock::now() - start > options.deadline) {
        error = std::make_exception_ptr(boost::system::system_error(boost::asio::error::timed_out));
      }
    }
    boost::asio::post(executor, [handler = std::move(handler), error, result = std::move(result),
                                 slot]() mutable {
      if (slot.is_connected()) slot.clear();
      std::move(handler)(error, std::move(result));
    });
    work.reset();
  }).detach();
}

}  // namespace detail

/// Runs B = `batch` tasks as scheduler.run() does, asynchronously. Completion signature:
/// void(std::exception_ptr, BatchResult<TaskResult<Task>>); the exception is a task's
/// exception, ShutdownError, or boost::system::system_error with operation_aborted
/// (cancelled through the token's cancellation slot) or timed_out (options.deadline). The
/// handler runs through its associated executor, never inline. `task` is decay-copied and
/// kept alive until completion.
///
/// @code
/// auto [values, report] = co_await ata::runtime::async_run(
///     scheduler, 16, [](const ata::runtime::TaskContext& ctx) { return ctx.task(); },
///     boost::asio::use_awaitable);
/// @endcode
template <class Task, class CompletionToken>
auto async_run(BatchScheduler& scheduler, std::size_t batch, Task&& task,
               const BatchOptions& options, CompletionToken&& token) {
  using Decayed = std::decay_t<Task>;
  static_assert(std::invocable<Decayed&, const TaskContext&>,
                "a task is called as task(const ata::runtime::TaskContext&)");
  using Signature = void(std::exception_ptr, BatchResult<TaskResult<Decayed>>);
  return boost::asio::async_initiate<CompletionToken, Signature>(
      [](auto handler, BatchScheduler* target, std::size_t size, Decayed body,
         BatchOptions chosen) {
        detail::start_thread_batch(*target, size, std::move(body), chosen, std::move(handler));
      },
      token, &scheduler, batch, std::forward<Task>(task), options);
}

/// async_run() without options.
template <class Task, class CompletionToken>
auto async_run(BatchScheduler& scheduler, std::size_t batch, Task&& task, CompletionToken&& token) {
  return async_run(scheduler, batch, std::forward<Task>(task), BatchOptions{},
                   std::forward<CompletionToken>(token));
}

}  // namespace ata::runtime

#pragma once
/// @file
/// A TaskStream as an Asio asynchronous operation: async_run_stream() follows Asio's
/// completion-token conventions (a completion handler, use_future, use_awaitable, deferred,
/// ...), as async_run() does for batches, over the same engine as TaskStream::run(). Needs
/// Boost.Asio.

#include <utility>  // before Asio: g++ 12's libstdc++ needs it for Asio's headers

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <atomic>
#include <exception>
#include <memory>
#include <mutex>
#include <type_traits>

#include "ata/runtime/task_stream.hpp"

namespace ata::runtime {

namespace detail {

/// One asynchronous stream: owns the task, the consumer and the handler until the handler has
/// run.
template <class Task, class Consumer, class Handler>
class AsyncStream final
    : public std::enable_shared_from_this<AsyncStream<Task, Consumer, Handler>> {
 public:
  AsyncStream(TaskStream& stream, Task task, Consumer consumer, Handler handler)
      : task_(std::move(task)),
        consumer_(std::move(consumer)),
        body_(task_, consumer_, stream.lanes().size()),
        handler_(std::move(handler)),
        work_(boost::asio::make_work_guard(boost::asio::get_associated_executor(handler_))) {}

  void start(TaskStream& stream, const StreamOptions& options) noexcept {
    // Assigned before the stream starts, so before its completion can clear it.
    auto slot = boost::asio::get_associated_cancellation_slot(handler_);
    if (slot.is_connected()) {
      // Any cancellation type ends the stream as a stop request does.
      slot.assign([weak = this->weak_from_this()](boost::asio::cancellation_type type) {
        if (type == boost::asio::cancellation_type::none) return;
        if (const auto self = weak.lock()) self->cancel();
      });
    }
    std::shared_ptr<StreamState> state;
    try {
      // The completion keeps this operation, so the body, alive until the stream is over.
      state = start_stream(
          stream, body_, options,
          [self = this->shared_from_this()](std::exception_ptr error, StreamReport report) {
            self->post_completion(std::move(error), std::move(report));
          });
    } catch (...) {
      post_completion(std::current_exception(), StreamReport{});
      return;
    }
    bool cancelled = false;
    {
      std::lock_guard lock(state_mutex_);
      state_ = state;
      cancelled = cancelled_;
    }
    if (cancelled) stop_stream(state);
  }

 private:
  // Runs the handler on its associated executor, never inline (unless posting itself fails).
  // A cancellation that comes before the stream has started stops it as soon as it has.
  void cancel() noexcept {
    std::weak_ptr<StreamState> state;
    {
      std::lock_guard lock(state_mutex_);
      cancelled_ = true;
      state = state_;
    }
    stop_stream(state);
  }

  void post_completion(std::exception_ptr error, StreamReport report) noexcept {
    // The handler waits until this thread is out of post() and holds nothing of its executor,
    // as in async_run() (post_to_handler()).
    const auto gate = std::make_shared<std::atomic<bool>>(false);
    try {
      boost::asio::post(work_.get_executor(), [self = this->shared_from_this(), gate, error,
                                               report = std::move(report)]() mutable {
        gate->wait(false, std::memory_order_acquire);
        self->complete(std::move(error), std::move(report));
      });
    } catch (...) {
      complete(std::move(error), std::move(report));
      return;
    }
    gate->store(true, std::memory_order_release);
    gate->notify_one();
  }

  void complete(std::exception_ptr error, StreamReport report) noexcept {
    auto slot = boost::asio::get_associated_cancellation_slot(handler_);
    if (slot.is_connected()) slot.clear();
    // Moved out first: the handler may start the next stream, or destroy what this one used.
    auto handler = std::move(handler_);
    auto work = std::move(work_);
    std::move(handler)(std::move(error), std::move(report));
  }

  Task task_;
  Consumer consumer_;
  StreamBodyOf<Task, Consumer> body_;
  Handler handler_;
  boost::asio::executor_work_guard<boost::asio::associated_executor_t<Handler>> work_;
  std::mutex state_mutex_;
  std::weak_ptr<StreamState> state_;  // state_mutex_; set once the stream has started
  bool cancelled_ = false;            // state_mutex_
};

/// The initiation of async_run_stream().
struct InitiateAsyncStream {
  template <class Handler, class Task, class Consumer>
  void operator()(Handler&& handler, TaskStream* stream, Task&& task, Consumer&& consumer,
                  const StreamOptions& options) const {
    using Operation =
        AsyncStream<std::decay_t<Task>, std::decay_t<Consumer>, std::decay_t<Handler>>;
    auto operation = std::make_shared<Operation>(*stream, std::forward<Task>(task),
                                                 std::forward<Consumer>(consumer),
                                                 std::forward<Handler>(handler));
    operation->start(*stream, options);
  }
};

}  // namespace detail

/// Runs a stream as stream.run() does, asynchronously, and completes with
/// void(std::exception_ptr, StreamReport).
///
/// @code
/// boost::asio::io_context io;
/// ata::runtime::async_run_stream(
///     stream, [](const ata::runtime::StreamContext& ctx) { return ctx.version(); },
///     [](ata::runtime::StreamDelivery<std::uint64_t>& d) {
///       d.advance();
///       if (d.version() == 1000) d.end_stream();
///       return ata::runtime::StreamVerdict::accept;
///     },
///     ata::runtime::StreamOptions{}.set_stale_bound(4),
///     [](std::exception_ptr error, ata::runtime::StreamReport report) { /* ... */ });
/// io.run();  // returns once the handler has run
/// @endcode
///
/// - The exception is null on success; else what TaskStream::run() would throw
///   (ata::InvalidArgument for a worker out of range, ShutdownError, ata::Error, the
///   consumer's exception), with an empty report. A cancellation through the token's slot (any
///   type) ends the stream as a stop request does: it completes with its report,
///   StreamEnd::stop_requested, after every running task was delivered.
/// - `task` and `consumer` are decay-copied and kept alive until the handler has run; nothing
///   the caller owns is borrowed. The consumer runs on the lanes, under the stream's lock, as
///   with run().
/// - The handler runs through its associated executor, never inside async_run_stream(), and
///   the executor counts the stream as outstanding work.
///
/// Thread-safety: may be called from any thread, including the lanes' own (it never waits),
/// any number of times at once. The TaskStream must outlive the operation. Only a failure to
/// allocate the operation itself is thrown by async_run_stream().
template <class Task, class Consumer, class CompletionToken>
auto async_run_stream(TaskStream& stream, Task&& task, Consumer&& consumer,
                      const StreamOptions& options, CompletionToken&& token) {
  static_assert(std::is_invocable_v<std::decay_t<Task>&, const StreamContext&>,
                "a streamed task is called as task(const StreamContext&)");
  using Result = std::invoke_result_t<std::decay_t<Task>&, const StreamContext&>;
  static_assert(
      std::is_void_v<Result> || (std::is_object_v<Result> && std::is_move_constructible_v<Result>),
      "a streamed task returns void or a movable value (not a reference)");
  static_assert(
      std::is_same_v<std::invoke_result_t<std::decay_t<Consumer>&, StreamDelivery<Result>&>,
                     StreamVerdict>,
      "the consumer is called as consumer(StreamDelivery<R>&) and returns a "
      "StreamVerdict");
  return boost::asio::async_initiate<CompletionToken, void(std::exception_ptr, StreamReport)>(
      detail::InitiateAsyncStream{}, token, &stream, std::forward<Task>(task),
      std::forward<Consumer>(consumer), options);
}

/// async_run_stream() with the default StreamOptions.
template <class Task, class Consumer, class CompletionToken>
auto async_run_stream(TaskStream& stream, Task&& task, Consumer&& consumer,
                      CompletionToken&& token) {
  return async_run_stream(stream, std::forward<Task>(task), std::forward<Consumer>(consumer),
                          StreamOptions{}, std::forward<CompletionToken>(token));
}

}  // namespace ata::runtime

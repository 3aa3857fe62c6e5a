#pragma once
/// @file
/// A stream of tasks over Lanes: the workers are kept busy, and each result is handed to a
/// consumer as soon as it is in, tagged with its worker, the version it started from and its
/// duration. The primitive of asynchronous methods (asynchronous SGD), beside the batches of
/// BatchScheduler.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <type_traits>
#include <utility>
#include <vector>

#include "ata/core/error.hpp"
#include "ata/runtime/caller_lane_pool.hpp"
#include "ata/runtime/lanes.hpp"
#include "ata/runtime/stream_report.hpp"
#include "ata/runtime/task_context.hpp"

namespace ata::runtime {

class Observer;
class StreamEvent;
class TaskStream;

namespace detail {
class StreamState;
class DeadlineTimer;
template <class Task, class Consumer>
class StreamBodyOf;
/// What a delivery says of its task (StreamEvent's accessors).
struct DeliveryFacts {
  std::size_t task = 0;
  std::size_t worker = 0;
  std::uint64_t start_version = 0;
  std::chrono::nanoseconds started{0};
  std::chrono::nanoseconds duration{0};
  StreamOutcome outcome = StreamOutcome::completed;
  std::exception_ptr error;
};
/// Fills `event`'s untyped part with the delivery `state` is making.
void fill_event(StreamState& state, StreamEvent& event) noexcept;
}  // namespace detail

/// How one stream runs, with fluent setters. A value type; not synchronised.
///
/// @code
/// auto options = ata::runtime::StreamOptions{}
///                    .set_workers({0, 2, 3})   // keep these busy at first (default: all)
///                    .set_stale_bound(8)       // stop a task once its delay reaches 8
///                    .set_deadline(std::chrono::seconds(10));
/// @endcode
class StreamOptions {
 public:
  /// The workers kept busy from the start, by lane index, each at most once (the consumer may
  /// change the set later: StreamDelivery::keep_busy()). Empty (the default): every lane.
  /// Indices are checked against the lanes by run(); a repeated one is refused here
  /// (ata::InvalidArgument).
  StreamOptions& set_workers(std::vector<std::size_t> workers);
  /// Requests the stop of a running task as soon as its delay, the stream's version minus the
  /// version it started from, reaches `bound` (Ringmaster's R; >= 1, else
  /// ata::InvalidArgument). Unset (the default): tasks are stopped only when the stream ends.
  StreamOptions& set_stale_bound(std::uint64_t bound);
  /// Ends the stream (StreamEnd::deadline) once `after` has passed since run() was called
  /// (>= 0, else ata::InvalidArgument; 0: the stream ends before a task starts).
  StreamOptions& set_deadline(std::chrono::nanoseconds after);

  [[nodiscard]] const std::vector<std::size_t>& workers() const noexcept { return workers_; }
  [[nodiscard]] std::optional<std::uint64_t> stale_bound() const noexcept { return stale_bound_; }
  [[nodiscard]] std::optional<std::chrono::nanoseconds> deadline() const noexcept {
    return deadline_;
  }

 private:
  std::vector<std::size_t> workers_;
  std::optional<std::uint64_t> stale_bound_;
  std::optional<std::chrono::nanoseconds> deadline_;
};

/// Handed to every streamed task: a TaskContext (task() is the task's number in the stream's
/// start order, 0-based; worker(); the stop token) and the version it starts from.
///
/// The stop is requested when the task's delay reaches StreamOptions::set_stale_bound(), when
/// the stream ends, or when the lanes shut down; a long task should poll stop_requested().
/// Read-only and used on one worker thread.
class StreamContext : public TaskContext {
 public:
  StreamContext(std::size_t task, std::size_t worker, std::stop_token stop,
                std::uint64_t version) noexcept
      : TaskContext(task, worker, std::move(stop)), version_(version) {}

  /// The stream's version when the task started. Everything the consumer did before it
  /// advanced the stream to this version happens before the task starts.
  [[nodiscard]] std::uint64_t version() const noexcept { return version_; }

 private:
  std::uint64_t version_;
};

/// One task's delivery to the consumer, and the consumer's handle on the stream: the version,
/// the workers kept busy, the end. Valid during the consumer's call only; every method is
/// called from the consumer only (under the stream's lock, see TaskStream).
class StreamEvent {
 public:
  StreamEvent(const StreamEvent&) = delete;
  StreamEvent& operator=(const StreamEvent&) = delete;

  /// The task's number in the stream's start order (StreamContext::task()).
  [[nodiscard]] std::size_t task() const noexcept { return facts_.task; }
  /// The worker (lane) that ran it.
  [[nodiscard]] std::size_t worker() const noexcept { return facts_.worker; }
  /// The version it started from (StreamContext::version()).
  [[nodiscard]] std::uint64_t start_version() const noexcept { return facts_.start_version; }
  /// The stream's version now (advance() raises it).
  [[nodiscard]] std::uint64_t version() const noexcept;
  /// version() - start_version(): how many versions the result is behind.
  [[nodiscard]] std::uint64_t delay() const noexcept { return version() - facts_.start_version; }
  /// When the task started on its worker, since run() was called.
  [[nodiscard]] std::chrono::nanoseconds started() const noexcept { return facts_.started; }
  /// How long it ran on its worker, slowdown included (up to its stop, for a stopped task).
  [[nodiscard]] std::chrono::nanoseconds duration() const noexcept { return facts_.duration; }
  [[nodiscard]] StreamOutcome outcome() const noexcept { return facts_.outcome; }
  [[nodiscard]] bool completed() const noexcept {
    return facts_.outcome == StreamOutcome::completed;
  }
  [[nodiscard]] bool stopped() const noexcept { return facts_.outcome == StreamOutcome::stopped; }
  [[nodiscard]] bool failed() const noexcept { return facts_.outcome == StreamOutcome::failed; }
  /// The task's exception when failed(), else null. Rethrow it from the consumer to end the
  /// stream with it.
  [[nodiscard]] const std::exception_ptr& error() const noexcept { return facts_.error; }
  /// Whether the stream is ending: its worker will not be restarted, whatever the consumer
  /// says (the deliveries of the tasks still running at the end come with ending() true).
  [[nodiscard]] bool ending() const noexcept;

  /// Raises the stream's version by `steps`. With a stale bound R, every running task whose
  /// delay reaches R is stopped now: it is delivered as stopped, whatever it returns. Its stop
  /// token is triggered once the consumer has returned, outside the stream's lock (a request
  /// may wake a sleeping thread). Tasks started after the call start from the new version.
  void advance(std::uint64_t steps = 1) noexcept;
  /// Whether the stream keeps worker `worker` busy: a worker kept busy starts a new task as
  /// soon as its previous one is delivered (the delivered one's worker right after this call,
  /// from the version current then); a worker taken off finishes the task it runs, which is
  /// delivered, and starts no other. Putting an idle worker back starts it after this call.
  /// Throws ata::InvalidArgument for a worker out of range.
  void keep_busy(std::size_t worker, bool busy);
  [[nodiscard]] bool busy(std::size_t worker) const;
  /// Ends the stream after this call (StreamEnd::consumer, unless it was ending already): no
  /// task starts any more, the running ones get a stop request and are still delivered.
  void end_stream() noexcept;

 protected:
  StreamEvent() = default;
  ~StreamEvent() = default;

 private:
  friend void detail::fill_event(detail::StreamState& state, StreamEvent& event) noexcept;
  detail::StreamState* state_ = nullptr;
  detail::DeliveryFacts facts_;
};

/// A delivery with the task's result: value() holds what the task returned (unless it
/// failed; a stopped task's value is whatever it returned when it stopped).
template <class Result>
class StreamDelivery final : public StreamEvent {
 public:
  /// The task's result; throws ata::Error for a failed task, which returned none.
  [[nodiscard]] Result& value() {
    if (!value_) throw Error("StreamDelivery::value(): the task failed and returned no value");
    return *value_;
  }
  [[nodiscard]] bool has_value() const noexcept { return value_.has_value(); }

 private:
  template <class Task, class Consumer>
  friend class detail::StreamBodyOf;
  std::optional<Result> value_;
};

/// A delivery of a task that returns nothing.
template <>
class StreamDelivery<void> final : public StreamEvent {};

namespace detail {

/// A stream's task and consumer, type-erased for the engine (lib/runtime/task_stream.cpp).
/// Worker w calls execute() then deliver() for its task, never two tasks at once; deliver()
/// runs under the stream's lock.
class StreamBody {
 public:
  StreamBody(const StreamBody&) = delete;
  StreamBody& operator=(const StreamBody&) = delete;

  /// Runs the task for `ctx`; its result becomes worker ctx.worker()'s pending one.
  virtual void execute(const StreamContext& ctx) = 0;
  /// Hands worker `worker`'s pending result (none if its task failed) to the consumer, with
  /// what `state` says of the task (fill_event()), and returns the consumer's verdict.
  virtual StreamVerdict deliver(StreamState& state, std::size_t worker) = 0;

 protected:
  StreamBody() = default;
  ~StreamBody() = default;
};

template <class Task, class Consumer>
class StreamBodyOf final : public StreamBody {
 public:
  using Result = std::invoke_result_t<Task&, const StreamContext&>;

  StreamBodyOf(Task& task, Consumer& consumer, std::size_t workers)
      : task_(task), consumer_(consumer), pending_(std::is_void_v<Result> ? 0 : workers) {}

  void execute(const StreamContext& ctx) override {
    if constexpr (std::is_void_v<Result>) {
      std::invoke(task_, ctx);
    } else {
      pending_[ctx.worker()].value.emplace(std::invoke(task_, ctx));
    }
  }
  StreamVerdict deliver(StreamState& state, std::size_t worker) override {
    StreamDelivery<Result> delivery;
    fill_event(state, delivery);
    if constexpr (!std::is_void_v<Result>) {
      auto& pending = pending_[worker].value;
      delivery.value_ = std::move(pending);
      pending.reset();
    }
    return std::invoke(consumer_, delivery);
  }

 private:
  struct alignas(64) Pending {
    std::optional<std::conditional_t<std::is_void_v<Result>, char, Result>> value;
  };
  Task& task_;
  Consumer& consumer_;
  std::vector<Pending> pending_;  // one per worker, each written by its worker only
};

/// Called once when an asynchronous stream completes, on the thread that completes it (a
/// lane, the deadline timer's, a canceller's), with the error that ended it or its report.
using StreamCompletion = std::function<void(std::exception_ptr, StreamReport)>;

/// Throws ata::Error when the calling thread runs one of `lanes`' tasks (a blocking stream
/// there would wait for itself).
void refuse_own_thread(Lanes& lanes);
/// Starts a stream of `body` on `stream`'s lanes; `on_complete` empty for a blocking stream
/// (then wait_stream()). `body` must live until completion. Throws ata::InvalidArgument for a
/// worker out of range, with nothing started; lanes shut down end the stream at once with
/// ShutdownError, through its completion.
std::shared_ptr<StreamState> start_stream(TaskStream& stream, StreamBody& body,
                                          const StreamOptions& options,
                                          StreamCompletion on_complete);
/// Waits for a blocking stream's end (ending it once `stop` is triggered); its report, or
/// throws its error.
StreamReport wait_stream(StreamState& state, const std::stop_token& stop);
/// Ends the stream, if still alive, as a stop request does.
void stop_stream(const std::weak_ptr<StreamState>& stream) noexcept;

}  // namespace detail

/// Keeps chosen workers of Lanes busy with a task, and hands each result to a consumer as it
/// comes: the asynchronous counterpart of BatchScheduler, on the same lanes (WorkerPool,
/// PostedLanes, AsioLanes, ArenaLanes) and beside its batches.
///
/// @code
/// ata::runtime::WorkerPool pool(4);
/// ata::runtime::TaskStream stream(pool);
/// Model model;                                   // the consumer's alone: no lock needed
/// History history;                               // model of each version, for the tasks
/// auto report = stream.run(
///     [&](const ata::runtime::StreamContext& ctx) {
///       return gradient(history.at(ctx.version()), ctx.stop_token());
///     },
///     [&](ata::runtime::StreamDelivery<Gradient>& d) {
///       if (!d.completed() || d.delay() >= 8) return ata::runtime::StreamVerdict::reject;
///       model.step(d.value());
///       history.publish(d.version() + 1, model);  // before the version it belongs to
///       d.advance();                              // d's worker restarts from the new version
///       if (model.converged()) d.end_stream();
///       return ata::runtime::StreamVerdict::accept;
///     },
///     ata::runtime::StreamOptions{}.set_stale_bound(8));
/// @endcode
///
/// Semantics of one stream (run()):
/// - Each worker kept busy (StreamOptions::set_workers(), then StreamDelivery::keep_busy())
///   runs task(const StreamContext&) again and again, each time from the stream's version at
///   the task's start. The version starts at 0 and only the consumer raises it.
/// - Each task started is delivered exactly once, to consumer(StreamDelivery<R>&), R being
///   what the task returns (void allowed): with its worker, start version, start, duration and
///   outcome. A stopped task is delivered too, with the time it ran, as a censored
///   observation; a task that throws is delivered as failed, with its exception, and its
///   worker goes on (the consumer rethrows the error to end the stream with it instead).
/// - The consumer is called on the worker that ran the task, under the stream's lock: its
///   calls never overlap, each happens before the next, and before every task started from a
///   version it set. It must be short: it holds up the other workers' deliveries. Its verdict
///   (accept, reject) is counted; its worker then restarts from the version current then
///   (on a WorkerPool with nothing else queued on the lane, in the same section: from exactly
///   the version the consumer left), unless it is off the busy set or the stream is ending.
/// - With a stale bound R, a running task gets a stop request once its delay (version -
///   start version) reaches R; its stop token is a fresh one per task.
/// - The stream ends when the consumer calls end_stream(), the stop token given to run() is
///   triggered, the deadline passes, no worker is busy with nothing running, the consumer
///   throws (run() rethrows it) or the lanes shut down (run() throws ShutdownError) or cannot
///   post its work (ata::Error). The tasks still running then get a stop request and are
///   delivered (StreamEvent::ending()); run() returns once the last is, with the report.
///   Nothing started is lost, whatever ends the stream.
/// - On a WorkerPool a worker runs its tasks in a row while nothing else waits in its lane;
///   when a batch or another stream has queued work there, the stream yields the lane after
///   the task and comes back behind that work, so streams and batches share lanes task by
///   task. Posted lanes (AsioLanes, ArenaLanes) share their executor's threads with other
///   lanes and work, so there the stream gives the thread back after every task (its lane
///   posts its next run): one post per task, but no lane of the executor starves.
/// - Slowdowns (PoolOptions) apply to every task; a stream's "round" for Slowdown::change_at()
///   is its version at the task's start, plus 1.
/// - An Observer (set_observer()) hears each stream's start, each delivered task (its
///   StreamTaskRecord, once the consumer has returned) and the end (Observer's stream events).
///
/// Cost: one lock of the stream per task (start and delivery are one section), two clock reads
/// and the consumer's call; without an observer, one pointer test per delivery more.
/// docs/runtime.md ("Streams") compares it with a batch's per-task cost, docs/timelines.md
/// the cost of an observer.
///
/// Thread-safety: run() may be called from any number of threads at once, each call a stream
/// of its own (not from a task of the same lanes: that throws ata::Error). The stop token may
/// be triggered from any thread but the consumer's (which holds the lock: call end_stream()
/// there). The TaskStream and its lanes must outlive every stream it runs.
class TaskStream {
 public:
  /// Borrows `lanes`, which must outlive the TaskStream. Throws ata::InvalidArgument for lanes
  /// with a caller lane (reached only through a Lanes&: the overload below rules it out).
  explicit TaskStream(Lanes& lanes);
  /// A stream keeps lanes busy from their own threads; a caller lane has none (a batch's caller
  /// runs it only during its own batch).
  explicit TaskStream(CallerLanePool& lanes) = delete;
  ~TaskStream();
  TaskStream(const TaskStream&) = delete;
  TaskStream& operator=(const TaskStream&) = delete;

  /// Runs one stream (see the class comment) and returns its report. `task` is called on
  /// several workers at once, so must be safe to call concurrently; `consumer` is called
  /// under the stream's lock. Both are borrowed: run() returns only once neither will be
  /// called again, so they may capture locals by reference. Thread-safe.
  ///
  /// Throws ata::InvalidArgument for a worker of options.workers() out of range (before
  /// anything runs); ata::Error when called from one of the lanes' tasks; ShutdownError if the
  /// lanes are shut down before or while it runs; ata::Error if a lane cannot post its work;
  /// whatever the consumer throws. In every case but the first two, every task started was
  /// delivered before run() throws.
  template <class Task, class Consumer>
  StreamReport run(Task&& task, Consumer&& consumer, const StreamOptions& options = {},
                   const std::stop_token& stop = {}) {
    static_assert(std::is_invocable_v<Task&, const StreamContext&>,
                  "a streamed task is called as task(const StreamContext&)");
    using Result = std::invoke_result_t<Task&, const StreamContext&>;
    static_assert(std::is_void_v<Result> ||
                      (std::is_object_v<Result> && std::is_move_constructible_v<Result>),
                  "a streamed task returns void or a movable value (not a reference)");
    static_assert(
        std::is_same_v<std::invoke_result_t<Consumer&, StreamDelivery<Result>&>, StreamVerdict>,
        "the consumer is called as consumer(StreamDelivery<R>&) and returns a StreamVerdict");
    detail::refuse_own_thread(lanes_);
    detail::StreamBodyOf<std::remove_reference_t<Task>, std::remove_reference_t<Consumer>> body(
        task, consumer, lanes_.size());
    const auto state = detail::start_stream(*this, body, options, {});
    return detail::wait_stream(*state, stop);
  }

  /// The lanes the streams run on.
  [[nodiscard]] Lanes& lanes() noexcept { return lanes_; }
  /// Tells `observer` (borrowed; nullptr: none, the default) of every stream started from now
  /// on, blocking or asynchronous (Observer::on_stream_start(), on_stream_task(),
  /// on_stream_end()). Not synchronised with run() or async_run_stream(): set it while no
  /// stream is starting, and keep the observer alive until the streams it was told of have
  /// ended. A stream keeps the observer it started with.
  void set_observer(Observer* observer) noexcept { observer_ = observer; }
  [[nodiscard]] Observer* observer() const noexcept { return observer_; }
  /// Streams this TaskStream started so far (StreamStart::stream of the last). Thread-safe.
  [[nodiscard]] std::size_t streams() const noexcept {
    return streams_.load(std::memory_order_relaxed);
  }

 private:
  friend std::shared_ptr<detail::StreamState> detail::start_stream(TaskStream&, detail::StreamBody&,
                                                                   const StreamOptions&,
                                                                   detail::StreamCompletion);
  Lanes& lanes_;
  // Ends streams at their deadlines; its thread starts with the first deadline.
  std::unique_ptr<detail::DeadlineTimer> timer_;
  Observer* observer_ = nullptr;
  std::atomic<std::size_t> streams_{0};  // streams started, numbering them from 1
};

}  // namespace ata::runtime

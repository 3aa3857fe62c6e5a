#include "ata/runtime/task_stream.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <limits>
#include <mutex>
#include <span>
#include <string>
#include <utility>

#include "ata/core/error.hpp"
#include "ata/runtime/observer.hpp"
#include "ata/runtime/shutdown_error.hpp"
#include "runtime/brief_lock.hpp"
#include "runtime/deadline_timer.hpp"
#include "runtime/durations.hpp"
#include "runtime/lane_set.hpp"
#include "runtime/spin.hpp"
#include "runtime/task_clock.hpp"

namespace ata::runtime {

const char* outcome_name(StreamOutcome outcome) noexcept {
  switch (outcome) {
    case StreamOutcome::completed:
      return "completed";
    case StreamOutcome::stopped:
      return "stopped";
    case StreamOutcome::failed:
      return "failed";
  }
  return "unknown";
}

const char* end_name(StreamEnd end) noexcept {
  switch (end) {
    case StreamEnd::consumer:
      return "consumer";
    case StreamEnd::stop_requested:
      return "stop_requested";
    case StreamEnd::deadline:
      return "deadline";
    case StreamEnd::no_workers:
      return "no_workers";
  }
  return "unknown";
}

StreamOptions& StreamOptions::set_workers(std::vector<std::size_t> workers) {
  std::vector<std::size_t> sorted = workers;
  std::sort(sorted.begin(), sorted.end());
  if (const auto twice = std::adjacent_find(sorted.begin(), sorted.end()); twice != sorted.end()) {
    throw InvalidArgument("StreamOptions::set_workers(): worker " + std::to_string(*twice) +
                          " is listed twice");
  }
  workers_ = std::move(workers);
  return *this;
}

StreamOptions& StreamOptions::set_stale_bound(std::uint64_t bound) {
  if (bound == 0) {
    throw InvalidArgument(
        "StreamOptions::set_stale_bound(): the bound must be at least 1, got 0 (it would stop "
        "every task as it starts)");
  }
  stale_bound_ = bound;
  return *this;
}

StreamOptions& StreamOptions::set_deadline(std::chrono::nanoseconds after) {
  if (after < std::chrono::nanoseconds::zero()) {
    throw InvalidArgument("StreamOptions::set_deadline(): the deadline must be >= 0, got " +
                          std::to_string(after.count()) + " ns");
  }
  deadline_ = after;
  return *this;
}

namespace detail {

// One stream in flight. It is the stream's Chunk on every lane it keeps busy: a lane that
// reaches it runs the stream's tasks in a row, each started and delivered under mutex_ (one
// section per task: the delivery of a task and the start of the next), until its worker is
// taken off, the stream ends, or other work waits in its lane (it then queues itself again,
// behind that work).
//
// Completion: the stream is complete once it is ending and no lane is inside run() (inside_),
// so no task runs and the body is never touched again; a lane that reaches a queued entry
// later leaves at once. Whoever makes that transition (a lane leaving, or the one ending the
// stream when nobody is inside) completes it once, in leave_locked().
class StreamState final : public Chunk, public std::enable_shared_from_this<StreamState> {
 public:
  StreamState(LaneSet& lanes, DeadlineTimer& timer, StreamBody& body, const StreamOptions& options,
              StreamCompletion on_complete, Observer* observer, std::size_t number,
              std::chrono::steady_clock::time_point called)
      : lanes_(lanes),
        timer_(timer),
        body_(body),
        on_complete_(std::move(on_complete)),
        observer_(observer),
        number_(number),
        stale_bound_(options.stale_bound()),
        clock_(TaskClock::instance()),
        called_(called),
        start_ticks_(clock_.now()),
        entries_(lanes.size()),
        slots_(lanes.size()) {
    report_.tasks.assign(lanes.size(), 0);
    report_.busy.assign(lanes.size(), 0.0);
    to_enlist_.reserve(lanes.size());
    stale_stops_.reserve(lanes.size());
    for (auto& slot : slots_) {
      slot.enlisting.reserve(lanes.size());
      slot.stopping.reserve(lanes.size());
    }
  }

  // Keeps `workers` busy: queues the stream on their lanes, all or none. Lanes shut down
  // refuse it (ShutdownError), which ends the stream with that error, through completion like
  // every other end: a deadline may have completed it already.
  void start(std::span<const std::size_t> workers) noexcept {
    {
      std::lock_guard lock(mutex_);
      for (std::size_t worker : workers) {
        slots_[worker].busy = true;
        slots_[worker].enlisted = true;
      }
      busy_count_ = workers.size();
    }
    try {
      lanes_.submit(shared_from_this(), workers);
    } catch (...) {
      std::unique_lock lock(mutex_);
      for (std::size_t worker : workers) slots_[worker].enlisted = false;
      if (!ending_) fail_locked(std::current_exception());
      leave_locked(lock);
    }
  }

  // Tells the observer, if any, that the stream starts `workers`. Before start().
  void tell_start(std::span<const std::size_t> workers) const noexcept {
    if (observer_ != nullptr) {
      observer_->on_stream_start(StreamStart{number_, workers, stale_bound_, called_});
    }
  }

  // The deadline's timer entry, cancelled at completion. Before start().
  void set_deadline(DeadlineTimer::Id id) noexcept {
    std::lock_guard lock(mutex_);
    deadline_ = id;
  }

  // Ends the stream from outside the lanes (the waiter, the deadline timer, a cancellation).
  void end_from_outside(StreamEnd reason) noexcept {
    std::unique_lock lock(mutex_);
    end_locked(reason);
    leave_locked(lock);
  }

  // Waits until the stream is complete (ending it when `stop` is triggered first), then
  // returns the report or throws the error that ended it. Blocking streams only.
  StreamReport wait(const std::stop_token& stop) {
    // Polls first, as BatchScheduler::run() does: waking a sleeping thread costs more than a
    // short stream's end (docs/runtime.md, "Why idle threads poll").
    spin_until([&] { return completed_.load(std::memory_order_acquire); },
               lanes_.options().idle_spin());
    std::unique_lock lock(mutex_);
    changed_.wait(lock, stop, [&] { return complete_; });
    if (!complete_) {
      end_locked(StreamEnd::stop_requested);
      leave_locked(lock);  // completes it now if no lane is inside
      lock.lock();
      changed_.wait(lock, [&] { return complete_; });
    }
    // Moved out: the state may die on a lane, and the exception's reference count lives in
    // the uninstrumented libstdc++, where ThreadSanitizer cannot see it order anything.
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
    return std::move(report_);
  }

  // Chunk: the stream's entry in each lane's queue.
  QueueEntry& entry(std::size_t lane) noexcept override { return entries_[lane]; }
  void run(Lane& lane) noexcept override;
  void abandon(std::size_t lane, const std::exception_ptr& reason) noexcept override {
    std::unique_lock lock(mutex_);
    slots_[lane].enlisted = false;
    // A stream ending already has lost nothing: the entry would have started no task.
    if (!ending_) fail_locked(reason);
    leave_locked(lock);
  }
  void interrupt(const std::exception_ptr& reason) noexcept override {
    std::unique_lock lock(mutex_);
    if (!ending_) fail_locked(reason);
    leave_locked(lock);
  }

  // What the consumer sees and does, under mutex_ (StreamEvent's methods).
  [[nodiscard]] const DeliveryFacts& delivery() const noexcept { return delivering_; }
  [[nodiscard]] std::uint64_t version() const noexcept { return version_; }
  [[nodiscard]] bool ending() const noexcept { return ending_; }

  void advance(std::uint64_t steps) noexcept {
    version_ = steps > std::numeric_limits<std::uint64_t>::max() - version_
                   ? std::numeric_limits<std::uint64_t>::max()
                   : version_ + steps;
    if (!stale_bound_) return;
    for (auto& slot : slots_) {
      if (slot.running && !slot.stale && version_ - slot.version >= *stale_bound_ &&
          !slot.stop.stop_requested()) {
        // Decided here, under the lock (the task is delivered as stopped, whatever it
        // returns); requested once the lock is released (take_stale_stops()): a request wakes
        // a sleeping task, a system call that would hold every other delivery.
        slot.stale = true;
        ++report_.stale_stops;
        try {
          stale_stops_.push_back(slot.stop);
        } catch (...) {
          slot.stop.request_stop();
        }
      }
    }
  }

  void keep_busy(std::size_t worker, bool busy) {
    check_worker(worker, "StreamDelivery::keep_busy()");
    Slot& slot = slots_[worker];
    if (slot.busy == busy) return;
    slot.busy = busy;
    if (busy) {
      ++busy_count_;
    } else {
      --busy_count_;
    }
    // An idle lane is queued again once the consumer returns (not under the lock: queuing may
    // abandon, which takes it). A lane that is enlisted comes back to the new setting itself.
    if (busy && !slot.enlisted && !ending_) {
      slot.enlisted = true;
      to_enlist_.push_back(worker);
    }
  }
  [[nodiscard]] bool busy(std::size_t worker) const {
    check_worker(worker, "StreamDelivery::busy()");
    return slots_[worker].busy;
  }
  void end_stream() noexcept { end_locked(StreamEnd::consumer); }

 private:
  // One worker's part, written under mutex_. Apart so that lanes do not share lines.
  struct alignas(64) Slot {
    std::stop_source stop;  // the running task's; a fresh one after a stop was requested
    std::size_t task = 0;
    std::uint64_t version = 0;  // the running (or last) task's start version
    bool running = false;       // inside its task
    bool busy = false;          // kept busy by the consumer
    bool enlisted = false;      // the stream is queued on or running in this lane
    bool stale = false;         // the running task is stopped as stale, its request maybe due
    // The workers put back by the consumer of this lane's delivery, queued after it returns.
    std::vector<std::size_t> enlisting;
    // Stale stops this lane requests once it has released the lock (take_stale_stops()).
    std::vector<std::stop_source> stopping;
  };

  // Under the lock: moves the stale stops decided so far into `out`, to request with
  // request_stops() once the lock is released. Whoever releases the lock after a delivery
  // takes them, so none waits longer than the delivery that decided it.
  void take_stale_stops(std::vector<std::stop_source>& out) noexcept {
    if (!stale_stops_.empty()) out.swap(stale_stops_);
  }
  static void request_stops(std::vector<std::stop_source>& stops) noexcept {
    for (auto& stop : stops) stop.request_stop();
    stops.clear();
  }

  void check_worker(std::size_t worker, const char* what) const {
    if (worker >= slots_.size()) {
      throw InvalidArgument(std::string(what) + ": worker " + std::to_string(worker) +
                            " is out of range for " + std::to_string(slots_.size()) + " lanes");
    }
  }

  void end_locked(StreamEnd reason) noexcept {
    if (ending_) return;
    ending_ = true;
    report_.end = reason;
    to_enlist_.clear();
    for (auto& slot : slots_) {
      if (slot.running) slot.stop.request_stop();
    }
  }

  void fail_locked(const std::exception_ptr& error) noexcept {
    if (!error_) error_ = error;
    end_locked(report_.end);
  }

  // No worker left to start a task and none running: nothing more can happen.
  void end_if_idle_locked() noexcept {
    if (busy_count_ == 0 && running_count_ == 0) end_locked(StreamEnd::no_workers);
  }

  // Whether the caller's step has just completed the stream (see leave_locked()). The
  // observer hears the end here, under the lock, before a waiter can see complete_ and take the
  // report.
  bool complete_locked() noexcept {
    if (!ending_ || inside_ > 0 || complete_) return false;
    report_.version = version_;
    report_.wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - called_).count();
    if (observer_ != nullptr) {
      observer_->on_stream_end(StreamFinish{number_, error_ != nullptr, report_});
    }
    complete_ = true;
    completed_.store(true, std::memory_order_release);
    return true;
  }

  // Completes the stream if the caller's step made it complete, then unlocks: the deadline
  // is cancelled, a waiter woken, an asynchronous stream's completion called, outside the
  // lock and once.
  void leave_locked(std::unique_lock<BriefLock>& lock) noexcept {
    if (!complete_locked()) {
      lock.unlock();
      return;
    }
    const auto deadline = deadline_;
    StreamCompletion on_complete = std::move(on_complete_);
    // An asynchronous stream's outcome goes to its completion; a blocking one's stays for
    // wait(). The error is moved out as in wait().
    std::exception_ptr error;
    StreamReport report;
    if (on_complete) {
      error = std::exchange(error_, nullptr);
      if (!error) report = std::move(report_);
    }
    lock.unlock();
    if (deadline) timer_.cancel(*deadline);
    if (on_complete) {
      on_complete(std::move(error), std::move(report));
    } else {
      changed_.notify_all();
    }
  }

  // Queues the stream on `lane`; on failure, the stream ends with the error.
  void enlist(std::size_t lane, std::unique_lock<BriefLock>& lock) noexcept {
    try {
      lanes_.submit(shared_from_this(), std::span<const std::size_t>(&lane, 1));
    } catch (...) {
      lock.lock();
      slots_[lane].enlisted = false;
      if (!ending_) fail_locked(std::current_exception());
      lock.unlock();
    }
  }

  LaneSet& lanes_;
  DeadlineTimer& timer_;
  StreamBody& body_;
  StreamCompletion on_complete_;  // empty for a blocking stream; called once, at completion
  Observer* const observer_;      // null: none
  const std::size_t number_;      // StreamStart::stream
  const std::optional<std::uint64_t> stale_bound_;
  const TaskClock& clock_;
  // When run() was called: the deadline and the report's wall both count from it.
  const std::chrono::steady_clock::time_point called_;
  const TaskClock::Ticks start_ticks_;
  std::vector<QueueEntry> entries_;  // entries_[i]: the stream's place in lane i's queue

  mutable BriefLock mutex_;
  std::condition_variable_any changed_;  // complete_ became true
  std::vector<Slot> slots_;
  std::uint64_t version_ = 0;
  std::size_t inside_ = 0;         // lanes inside run()
  std::size_t running_count_ = 0;  // tasks running
  std::size_t busy_count_ = 0;     // workers kept busy
  bool ending_ = false;
  bool complete_ = false;
  std::atomic<bool> completed_{false};  // complete_, for polling without the lock
  std::exception_ptr error_;
  std::optional<DeadlineTimer::Id> deadline_;
  StreamReport report_;
  std::vector<std::size_t> to_enlist_;  // put back during the current delivery
  std::vector<std::stop_source> stale_stops_;  // decided by advance(), not yet requested
  DeliveryFacts delivering_;            // the delivery being made
};

void StreamState::run(Lane& lane) noexcept {
  const std::size_t worker = lane.index();
  Slot& slot = slots_[worker];
  std::unique_lock lock(mutex_);
  ++inside_;
  while (!ending_ && slot.busy) {
    if (slot.stale || slot.stop.stop_requested()) {
      try {
        slot.stop = std::stop_source();
      } catch (...) {
        fail_locked(std::current_exception());
        break;
      }
      slot.stale = false;
    }
    slot.task = report_.started++;
    slot.version = version_;
    slot.running = true;
    ++running_count_;
    ++report_.tasks[worker];
    const StreamContext ctx(slot.task, worker, slot.stop.get_token(), slot.version);
    take_stale_stops(slot.stopping);
    lock.unlock();
    // A lane with drawn delays requests them within its task, whose draw covers them (the
    // lane would sleep that time anyway): a stop costs the stream nothing, as in the
    // simulator. Any other lane before its task starts, out of the task's measured time.
    const bool within_task = lane.slowdown().draws_delays();
    if (!within_task) request_stops(slot.stopping);

    // Slowdown::change_at() counts rounds from 1: a stream's round is its version + 1.
    const std::size_t round = static_cast<std::size_t>(
        std::min<std::uint64_t>(ctx.version(), std::numeric_limits<std::size_t>::max() - 1) + 1);
    std::exception_ptr error;
    const TaskClock::Ticks started = clock_.now();
    try {
      lane.run_slowed_with(
          [&] {
            if (within_task) request_stops(slot.stopping);
            body_.execute(ctx);
          },
          ctx.stop_token(), round);
    } catch (...) {
      error = std::current_exception();
    }
    const TaskClock::Ticks ended = clock_.now();

    lock.lock();
    slot.running = false;
    --running_count_;
    // A stop requested while it ran (under this lock) makes it stopped, whatever it returned.
    const StreamOutcome outcome = slot.stale || ctx.stop_requested() ? StreamOutcome::stopped
                                  : error                            ? StreamOutcome::failed
                                                                     : StreamOutcome::completed;
    delivering_ = DeliveryFacts{ctx.task(),
                                worker,
                                ctx.version(),
                                clock_.to_duration(started - start_ticks_),
                                clock_.to_duration(ended - started),
                                outcome,
                                std::move(error)};
    switch (outcome) {
      case StreamOutcome::completed:
        ++report_.completed;
        break;
      case StreamOutcome::stopped:
        ++report_.stopped;
        break;
      case StreamOutcome::failed:
        ++report_.failed;
        break;
    }
    report_.busy[worker] += std::chrono::duration<double>(delivering_.duration).count();
    const std::uint64_t delay = version_ - delivering_.start_version;  // as the consumer sees it
    StreamVerdict verdict = StreamVerdict::reject;
    try {
      verdict = body_.deliver(*this, worker);
    } catch (...) {
      fail_locked(std::current_exception());
    }
    if (verdict == StreamVerdict::accept) {
      ++report_.accepted;
    } else {
      ++report_.rejected;
    }
    if (observer_ != nullptr) {
      observer_->on_stream_task(
          number_, StreamTaskRecord{delivering_.task, worker, delivering_.start_version, delay,
                                    delivering_.started, delivering_.duration,
                                    delivering_.outcome, verdict == StreamVerdict::accept});
    }
    delivering_.error = nullptr;
    end_if_idle_locked();

    // Other work waits in this lane (a batch, another stream), or the lane's thread is an
    // executor's, shared with other lanes and work: let it run, and come back behind it.
    const bool yield = !ending_ && slot.busy && (!lanes_.lanes_own_threads() || lane.has_queued());
    if (to_enlist_.empty() && !yield) continue;
    slot.enlisting.assign(to_enlist_.begin(), to_enlist_.end());
    to_enlist_.clear();
    take_stale_stops(slot.stopping);
    lock.unlock();
    request_stops(slot.stopping);
    for (std::size_t other : slot.enlisting) enlist(other, lock);
    if (yield) {
      enlist(worker, lock);
      lock.lock();
      --inside_;
      leave_locked(lock);
      return;
    }
    lock.lock();
  }
  slot.enlisted = false;
  --inside_;
  if (!ending_) end_if_idle_locked();
  // Local: the stream may be complete, and its lanes gone, once the lock is released.
  std::vector<std::stop_source> stopping;
  take_stale_stops(stopping);
  leave_locked(lock);
  request_stops(stopping);
}

namespace {

// The workers to keep busy at first: options.workers(), or every lane.
std::vector<std::size_t> first_workers(const StreamOptions& options, std::size_t lanes) {
  std::vector<std::size_t> workers = options.workers();
  for (std::size_t worker : workers) {
    if (worker >= lanes) {
      throw InvalidArgument("TaskStream::run(): worker " + std::to_string(worker) +
                            " of StreamOptions::set_workers() is out of range for " +
                            std::to_string(lanes) + " lanes");
    }
  }
  if (workers.empty()) {
    for (std::size_t i = 0; i < lanes; ++i) workers.push_back(i);
  }
  return workers;
}

}  // namespace

void fill_event(StreamState& state, StreamEvent& event) noexcept {
  event.state_ = &state;
  event.facts_ = state.delivery();
}

void refuse_own_thread(Lanes& lanes) {
  if (core_of(lanes).is_own_thread()) {
    throw Error(
        "TaskStream::run() called from one of its lanes' tasks would wait for itself; run the "
        "stream from another thread, or use async_run_stream()");
  }
}

std::shared_ptr<StreamState> start_stream(TaskStream& stream, StreamBody& body,
                                          const StreamOptions& options,
                                          StreamCompletion on_complete) {
  const auto called = std::chrono::steady_clock::now();
  LaneSet& set = core_of(stream.lanes());
  const std::vector<std::size_t> workers = first_workers(options, set.size());
  const std::size_t number = stream.streams_.fetch_add(1, std::memory_order_relaxed) + 1;
  auto state = std::make_shared<StreamState>(set, *stream.timer_, body, options,
                                             std::move(on_complete), stream.observer_, number,
                                             called);
  state->tell_start(workers);
  if (options.deadline() && *options.deadline() == std::chrono::nanoseconds::zero()) {
    state->end_from_outside(StreamEnd::deadline);
    return state;
  }
  if (options.deadline()) {
    state->set_deadline(stream.timer_->schedule(
        saturating_add(called, std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                   *options.deadline())),
        [weak = std::weak_ptr<StreamState>(state)] {
          if (const auto alive = weak.lock()) alive->end_from_outside(StreamEnd::deadline);
        }));
  }
  state->start(workers);
  return state;
}

StreamReport wait_stream(StreamState& state, const std::stop_token& stop) {
  return state.wait(stop);
}

void stop_stream(const std::weak_ptr<StreamState>& stream) noexcept {
  if (const auto alive = stream.lock()) alive->end_from_outside(StreamEnd::stop_requested);
}

}  // namespace detail

std::uint64_t StreamEvent::version() const noexcept { return state_->version(); }
bool StreamEvent::ending() const noexcept { return state_->ending(); }
void StreamEvent::advance(std::uint64_t steps) noexcept { state_->advance(steps); }
void StreamEvent::keep_busy(std::size_t worker, bool busy) { state_->keep_busy(worker, busy); }
bool StreamEvent::busy(std::size_t worker) const { return state_->busy(worker); }
void StreamEvent::end_stream() noexcept { state_->end_stream(); }

TaskStream::TaskStream(Lanes& lanes)
    : lanes_(lanes), timer_(std::make_unique<detail::DeadlineTimer>()) {
  // A stream keeps lanes busy from their own threads; a caller lane has none (a batch's
  // caller runs it only during its own batch).
  if (lanes_.has_caller_lane()) {
    throw InvalidArgument(
        "a task stream needs a thread per lane; this pool's last worker is the caller lane "
        "(CallerLanePool)");
  }
}

TaskStream::~TaskStream() = default;

}  // namespace ata::runtime

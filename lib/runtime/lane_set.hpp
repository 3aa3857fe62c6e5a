#pragma once
// The lanes a batch is dispatched to. A lane has a stable index and a FIFO queue of chunks,
// and runs one chunk at a time, its tasks in a row; where it runs them is up to the kind of
// lane set: its own thread (ThreadLanes, behind WorkerPool), or a function posted to an
// executor the user owns (PostedLanes: Asio executors, oneTBB arenas). The batch engine
// (Batch, BatchOperation) sees only LaneSet and Lane, so every mode is written once.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <span>
#include <stop_token>
#include <string>
#include <vector>

#include "ata/models/random.hpp"
#include "ata/runtime/detail/task_body.hpp"
#include "ata/runtime/pool_options.hpp"
#include "ata/runtime/slowdown.hpp"
#include "ata/runtime/task_context.hpp"

namespace ata::runtime::detail {

class Chunk;
class Lane;

// One chunk's place in one lane's queue. The chunk owns it, so queuing allocates nothing and
// a submission cannot fail half-way.
struct QueueEntry {
  std::shared_ptr<Chunk> chunk;  // keeps the chunk alive while it is queued
  QueueEntry* next = nullptr;
};

// One batch's share of work for each of its lanes: a lane runs it, or abandons it when
// shutting down first. A chunk object may be queued on several lanes at once.
class Chunk {
 public:
  Chunk() = default;
  Chunk(const Chunk&) = delete;
  Chunk& operator=(const Chunk&) = delete;
  virtual ~Chunk() = default;

  // The entry this chunk takes in lane `lane`'s queue; queued at most once at a time.
  virtual QueueEntry& entry(std::size_t lane) noexcept = 0;
  // Wherever lane `lane` runs its chunks, one at a time.
  virtual void run(Lane& lane) noexcept = 0;
  // Lane `lane`'s copy will never run: the lanes shut down first, or could not be reached.
  virtual void abandon(std::size_t lane, const std::exception_ptr& reason) noexcept = 0;
  // The lanes are shutting down while one runs this chunk: stop it.
  virtual void interrupt(const std::exception_ptr& reason) noexcept = 0;
};

class Lane {
 public:
  Lane(std::size_t index, Slowdown slowdown, std::uint64_t run_seed);

  [[nodiscard]] std::size_t index() const noexcept { return index_; }
  [[nodiscard]] const Slowdown& slowdown() const noexcept { return slowdown_; }
  // Takes `tasks` finished or skipped tasks off this lane's backlog (see added_). Only from
  // the chunk this lane runs, which alone writes finished_: a plain store, no locked
  // read-modify-write per task. The lane outlives a lane set that a task destroys.
  void settle_backlog(std::size_t tasks) noexcept {
    finished_.store(finished_.load(std::memory_order_relaxed) + tasks, std::memory_order_release);
  }

  // Whether chunks wait in this lane's queue (a hint: read without the lock). A chunk that
  // runs for long (a stream) yields the lane when it is true.
  [[nodiscard]] bool has_queued() const noexcept {
    return queued_.load(std::memory_order_relaxed) > 0;
  }

  // Runs ctx's task through `body`, slowed down as this lane is in round `round`. Only from
  // the chunk this lane runs: the generator and the pause state are unsynchronised.
  void run_slowed(TaskBody& body, const TaskContext& ctx, std::size_t round) {
    run_slowed_with([&] { body.execute(ctx); }, ctx.stop_token(), round);
  }
  // As run_slowed(), for any task: `run()` runs it once, `stop` cuts its delay short.
  template <class Run>
  void run_slowed_with(Run&& run, const std::stop_token& stop, std::size_t round);

  // Tracked batches (backups, retries) mark the task this lane runs, so that a lane stuck in
  // one (past `stuck_at`) is quarantined: allocation skips it until the task returns. Only
  // from the chunk this lane runs.
  using Clock = std::chrono::steady_clock;
  void mark_task(Clock::time_point started, Clock::time_point stuck_at) noexcept {
    started_.store(started.time_since_epoch().count(), std::memory_order_relaxed);
    stuck_at_.store(stuck_at.time_since_epoch().count(), std::memory_order_release);
  }
  void clear_task() noexcept { stuck_at_.store(kNoTask, std::memory_order_release); }
  // Waits `delay` (what the task's run left of a sleep slowdown's draw), or until `stop`,
  // ending up to half of it early to make up for this lane's late wake-ups. Only from the
  // chunk this lane runs, as run_slowed().
  void pause(Clock::duration delay, const std::stop_token& stop);
  // How long the marked task has run if the lane is stuck at `now`, else 0. Thread-safe.
  [[nodiscard]] double stuck_for(Clock::time_point now) const noexcept {
    const auto stuck_at = stuck_at_.load(std::memory_order_acquire);
    if (stuck_at == kNoTask || now.time_since_epoch().count() < stuck_at) return 0.0;
    const Clock::duration ran(now.time_since_epoch().count() -
                              started_.load(std::memory_order_relaxed));
    return std::chrono::duration<double>(ran).count();
  }

 private:
  friend class LaneSet;
  friend class ThreadLanes;
  friend class PostedLanesCore;

  static constexpr Clock::rep kNoTask = std::numeric_limits<Clock::rep>::max();

  const std::size_t index_;
  const Slowdown slowdown_;
  std::atomic<Clock::rep> started_{0};
  std::atomic<Clock::rep> stuck_at_{kNoTask};
  models::Rng rng_;  // stream (run seed, index): the simulator's stream for this worker
  // Sleep delays wait on this so that a stop request ends them early.
  std::mutex pause_mutex_;
  std::condition_variable_any pause_;
  // How late this lane's timed waits wake, a running mean, and how much longer than their
  // delays its waits have lasted so far, not yet taken off (see pause()).
  Clock::duration wake_lateness_{0};
  Clock::duration owed_{0};

  std::mutex queue_mutex_;
  std::condition_variable queue_changed_;  // a chunk queued, a chunk done, or stopping
  QueueEntry* head_ = nullptr;             // guarded by queue_mutex_, FIFO from head_ to tail_
  QueueEntry* tail_ = nullptr;             // guarded by queue_mutex_
  std::shared_ptr<Chunk> running_;         // guarded by queue_mutex_: the chunk being run
  bool serving_ = false;   // guarded by queue_mutex_: posted lanes, a run of the lane is posted
  bool stopping_ = false;  // guarded by queue_mutex_
  std::atomic<std::size_t> queued_{0};  // entries queued, for polling without the lock
  // The backlog, tasks of allocated chunks queued or running here and not finished, is
  // added_ - finished_: load-aware allocation reads it. added_ is raised before a submission
  // (and lowered for a share abandoned unrun), on any thread; finished_ counts the tasks this
  // lane finished or skipped.
  std::atomic<std::size_t> added_{0};
  std::atomic<std::size_t> finished_{0};
};

template <class Run>
void Lane::run_slowed_with(Run&& run, const std::stop_token& stop, std::size_t round) {
  switch (slowdown_.kind()) {
    case Slowdown::Kind::none:
      run();
      return;
    case Slowdown::Kind::repeat:
      run();
      for (std::size_t again = 1; again < slowdown_.repetitions() && !stop.stop_requested();
           ++again) {
        run();
      }
      return;
    case Slowdown::Kind::sleep: {
      // Drawn first, so every task started consumes exactly one draw, whatever it does. The
      // task lasts its draw, as in the simulator: the wait covers what its run left of it.
      const auto delay = slowdown_.draw(round, rng_);
      const auto begun = Clock::now();
      run();
      const auto left = delay - (Clock::now() - begun);
      if (left > Clock::duration::zero()) pause(left, stop);
      return;
    }
    case Slowdown::Kind::burn: {
      const auto delay = slowdown_.draw(round, rng_);
      const auto deadline = Clock::now() + delay;
      run();
      while (Clock::now() < deadline && !stop.stop_requested()) {
      }
      return;
    }
  }
}

// A set of n lanes: queues, backlog and shutdown, common to every kind; the kind decides
// where a lane's chunks run (wake()) and how shutdown waits for the running ones.
class LaneSet {
 public:
  LaneSet(const LaneSet&) = delete;
  LaneSet& operator=(const LaneSet&) = delete;
  virtual ~LaneSet();

  [[nodiscard]] std::size_t size() const noexcept { return lanes_.size(); }
  [[nodiscard]] const PoolOptions& options() const noexcept { return options_; }
  [[nodiscard]] std::size_t queued() const;
  [[nodiscard]] bool is_shut_down() const noexcept { return shut_down_.load(); }
  // Per lane, the tasks of allocated chunks queued or running there and not yet finished
  // (out.size() == size()). Thread-safe; a snapshot.
  void backlog(std::span<double> out) const noexcept;
  // Adds (or, with settle_backlog(), removes) `tasks` to lane `lane`'s backlog.
  void add_backlog(std::size_t lane, std::size_t tasks) noexcept;
  void settle_backlog(std::size_t lane, std::size_t tasks) noexcept;
  // The lanes stuck in a task now (Lane::stuck_for() > 0), in index order.
  [[nodiscard]] std::vector<std::size_t> stuck() const;
  [[nodiscard]] Lane& lane(std::size_t index) noexcept { return *lanes_[index]; }
  // The caller lane's index (CallerLanePool: the last), or size() when there is none. Its
  // Lane here is never queued on nor marked: each batch's caller runs that worker's work on a
  // Lane of its own (BatchOperation::run_caller_share()).
  [[nodiscard]] std::size_t caller_lane() const noexcept {
    return caller_lane_ ? lanes_.size() - 1 : lanes_.size();
  }
  // Whether the calling thread is running a chunk of this set (or is one of its threads): a
  // batch started there could wait for itself.
  [[nodiscard]] bool is_own_thread() const noexcept;

  // Queues `chunk` on each lane of `targets`, all of them or none: queuing allocates nothing.
  // Submissions are ordered as a whole, so every lane queue sees batches in the same order.
  // Throws ShutdownError (queuing nothing) after shutdown() has started.
  void submit(const std::shared_ptr<Chunk>& chunk, std::span<const std::size_t> targets);
  // As submit(), with the targets chosen by `choose()` under the submission lock, after the
  // shutdown check: whatever `choose()` makes visible (the pacer's queue takes a batch) and the
  // queuing are one step with respect to shutdown, which comes wholly before (ShutdownError,
  // `choose()` not called) or wholly after. `choose()` may throw, queuing nothing; the span
  // it returns must stay valid until the call returns.
  template <class Choose>
  void submit_chosen(const std::shared_ptr<Chunk>& chunk, Choose&& choose) {
    std::lock_guard order(submit_mutex_);
    if (shut_down_) refuse();
    queue_locked(chunk, choose());
  }
  // Stops the running chunks, abandons the queued ones and waits for the running ones to end;
  // throws ata::Error on the set's own thread, which would wait for itself. Otherwise
  // allocates nothing and throws nothing.
  virtual void shutdown() = 0;
  // Whether each lane has a thread of its own (WorkerPool), rather than sharing an executor's
  // threads with other lanes and other work (posted lanes): a chunk that runs for long (a
  // stream) gives a shared thread back after each task.
  [[nodiscard]] virtual bool lanes_own_threads() const noexcept = 0;

 protected:
  // `what` names the kind in errors ("worker pool", "executor lanes"); `caller_lane`: the last
  // lane is the caller lane.
  LaneSet(const PoolOptions& options, std::string what, bool caller_lane = false);

  // A chunk was queued on `lane`, which must run it (and the ones behind it) eventually.
  // Called outside the lane's lock, once per queued chunk; must not throw. Called under the
  // submission lock, which a destructor run by a task takes too: released earlier, a task
  // started by the first wake could destroy the set before the next.
  virtual void wake(Lane& lane) noexcept = 0;

  // Refuses new work, interrupts running chunks and abandons queued ones. Never throws.
  void stop_lanes() noexcept;
  // Abandons every chunk queued on `lane` with `reason` (queued_ and the queue emptied).
  // Called with nothing locked; the lane keeps running what it runs.
  static void abandon_queued(Lane& lane, const std::exception_ptr& reason) noexcept;
  // Takes the next queued chunk of `lane` to run (it becomes running_), or nullptr when the
  // queue is empty or stopping. Lock held by the caller.
  static Chunk* take_next(Lane& lane) noexcept;
  // Runs `chunk`, taken by take_next(), then drops the lane's reference to it (outside the
  // lock: it may be the last one). Returns whether more chunks are queued, unless stopping.
  static bool run_chunk(Lane& lane, Chunk& chunk) noexcept;
  [[nodiscard]] const std::string& what() const noexcept { return what_; }

  const PoolOptions options_;
  const bool caller_lane_;
  // Lane holds mutexes, so it is not movable; shared with whatever runs it, which may outlive
  // the set when a task destroys it.
  std::vector<std::shared_ptr<Lane>> lanes_;

 private:
  [[noreturn]] void refuse() const;
  // Queues `chunk` on `targets`; submit_mutex_ held, the set not shut down. Cannot fail.
  void queue_locked(const std::shared_ptr<Chunk>& chunk,
                    std::span<const std::size_t> targets) noexcept;

  const std::string what_;
  // Built up front, so that shutting down allocates nothing and cannot fail.
  const std::exception_ptr abandoned_error_;
  const std::exception_ptr interrupted_error_;
  std::mutex submit_mutex_;  // orders submissions against each other and against shutdown
  std::atomic<bool> shut_down_{false};  // set under submit_mutex_
};

// While alive, marks the calling thread as running lane `lane` of `set` (restoring what it
// was: an executor's thread runs other work too). The pointers are only compared.
class OwnThreadMark {
 public:
  OwnThreadMark(const LaneSet* set, const Lane* lane) noexcept;
  ~OwnThreadMark();
  OwnThreadMark(const OwnThreadMark&) = delete;
  OwnThreadMark& operator=(const OwnThreadMark&) = delete;

  // The lane the calling thread runs, if it is marked as running one of `set`'s.
  [[nodiscard]] static const Lane* current_lane(const LaneSet* set) noexcept;
  // Unmarks the calling thread if marked for `set`, which is being destroyed from one of its
  // own tasks: a later set at the same address must not take the thread for its own.
  static void forget(const LaneSet* set) noexcept;

 private:
  const LaneSet* previous_set_;
  const Lane* previous_lane_;
};

// While alive, and if `lane` sleeps as its slowdown, sets the calling thread's timer slack to
// 1 ns (Linux), so that sleeps of a millisecond do not overshoot by the default 50 us; then
// restores it (an executor's thread is not ours to change for good).
class TightTimerSlack {
 public:
  explicit TightTimerSlack(const Lane& lane) noexcept;
  ~TightTimerSlack();
  TightTimerSlack(const TightTimerSlack&) = delete;
  TightTimerSlack& operator=(const TightTimerSlack&) = delete;

 private:
  long previous_ = -1;  // the slack to restore, or -1 if unchanged
};

}  // namespace ata::runtime::detail

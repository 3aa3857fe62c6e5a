#pragma once
// One batch in flight: its chunks on the workers, the per-worker logs of what ran, and the
// protocol that decides when it is complete. The engine under BatchScheduler::run(), and
// under any other front end: a front end derives from Batch, owns the task body, and is told
// through on_complete() when the batch is over.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <vector>

#include "ata/core/allocation.hpp"
#include "ata/core/backup_rule.hpp"
#include "ata/core/plan.hpp"
#include "ata/core/policy.hpp"
#include "ata/core/worker_stats.hpp"
#include "ata/runtime/detail/task_body.hpp"
#include "ata/runtime/round_report.hpp"
#include "runtime/asymmetric_fence.hpp"
#include "runtime/brief_lock.hpp"
#include "runtime/deadline_timer.hpp"
#include "runtime/lane_set.hpp"
#include "runtime/task_clock.hpp"

namespace ata::runtime::detail {

// How the workers time their tasks and what they prepare for the policy.
enum class Timing : std::uint8_t {
  samples,      // every task timed and logged; the policy observes each (needs_every_sample())
  summaries,    // every task timed; each worker sums its accepted tasks' times for its summary
  chunk_means,  // allocated mode: one clock read per chunk; each task gets the chunk's mean
};

// An allocated batch or an indexed race with backups, retries or restart budgets
// ("tracked"): what it needs beyond the plain mode.
class CallerWaiter;
class TrackedStateCache;

struct Recovery {
  BackupOptions backups;            // the rule's settings; enabled = false: retries only
  std::size_t retries = 0;          // attempts after the first, per task
  double stuck_after = 16.0;        // x a lane's mean: past it, the lane counts as stuck
  std::vector<WorkerStats> learned;  // each lane's learned times when the batch was planned
  // Wakes an idle lane when a running task becomes overdue; for a batch without a blocking
  // caller (`caller`), who runs the timer while it waits.
  DeadlineTimer* timer = nullptr;
  // Per lane, the restart budget in seconds (+infinity: none); empty: no restarts. A copy that
  // has run its lane's budget is stopped, discarded, censored and started afresh there.
  std::vector<double> restart_after;
  // Set when the caller handed the task over: it owns the task body, and the batch completes
  // as soon as every index has a result, late copies finishing on their own.
  std::shared_ptr<void> owner;
  // A blocking caller waiting for the batch: it runs the batch's timer (CallerWaiter::wake_at)
  // and, with a caller lane, may be summoned to run that lane's part again; nullptr: an
  // asynchronous batch, whose timer is `timer`.
  CallerWaiter* caller = nullptr;
  // Where the batch's tracked state comes from and goes back to when the batch is destroyed;
  // nullptr: a state of its own.
  std::shared_ptr<TrackedStateCache> cache;
};

// The moments of a lane's task times, summed shifted by the first (exact for it, no division
// per task), for its summary at the end of its share.
struct ShiftedMoments {
  std::int64_t shift = -1;  // the first duration (ns)
  double sum = 0.0;         // of (duration - shift) in ns
  double squares = 0.0;
  std::size_t count = 0;
  void add(std::chrono::nanoseconds duration) noexcept {
    if (shift < 0) shift = duration.count();
    const auto shifted = static_cast<double>(duration.count() - shift);
    sum += shifted;
    squares += shifted * shifted;
    ++count;
  }
  [[nodiscard]] WorkerStats stats() const noexcept {
    if (count == 0) return {};
    constexpr double kSeconds = 1e-9;
    const double n = static_cast<double>(count);
    const double mean = static_cast<double>(shift) + sum / n;
    const double m2 = std::max(0.0, squares - sum * sum / n);
    return WorkerStats::from_moments(count, mean * kSeconds, m2 * kSeconds * kSeconds);
  }
};

// A stopped copy's running time, for Policy::observe_censored().
struct Censored {
  std::size_t worker;
  double seconds;
};

// Life of a batch:
//   submit() queues one chunk per worker with work (a quota a_i > 0, or a place in the race).
//   A worker reaching its chunk *enters* the batch, runs tasks, and *leaves*.
//   The batch *closes* when no more work is wanted: its tasks are all handed out (pull), its
//   B-th result is claimed (fungible), every share is done (allocated), or its outcome is
//   decided early (a task failed, cancel(), the pool shut down). Once closed, no worker enters
//   again: a chunk reached later is skipped without touching the task body. The batch
//   *completes* when it is closed and no worker is inside; on_complete() then runs, once.
//
// Why it is correct: state_ holds the closed bit and the number of workers inside. Entering is
// a compare-exchange that refuses a closed state, so once closed the count only falls; the
// one thread whose update leaves exactly "closed, nobody inside" (the closer if nobody was
// inside, else the last to leave) completes the batch. All updates are read-modify-writes of
// state_ (acq_rel), so everything the workers did inside happens before on_complete().
// The outcome is set once, by compare-exchange: the first decision wins (its error set under
// outcome_mutex_), and completion turns "still pending" into success. A worker decides while
// inside, so before completion; cancel() and shutdown do not override a batch whose B results
// are already in.
class Batch : public Chunk, public std::enable_shared_from_this<Batch> {
 public:
  enum class Outcome : std::uint8_t {
    pending,    // not complete yet
    succeeded,  // B results, ready for collect()
    failed,     // take_error(): a task's exception, or ShutdownError
    cancelled,  // cancel() came first
  };

  // Runs `plan` (one role per worker) over `batch` tasks: quotas only (Dispatch::allocated,
  // summing to `batch`), or a race of plan.racers() without quotas (Dispatch::greedy for a
  // fungible race, Dispatch::pull for an indexed one), or quotas with a race (Dispatch::mixed):
  // tracked with an indexed race; with a fungible one each quota is at most that many samples,
  // and the racers compute until B results are in, as in the simulator.
  // `recovery` makes a batch of quotas tracked (a fungible race takes its retries and restart
  // budgets only). An indexed race (pull, or mixed) queued on the lanes needs one: it runs
  // tracked only; the pacer's pull batches, handed out by enter_for_task(), need none. `body`
  // must stay alive until on_complete() has been called. Timing::chunk_means applies to
  // allocated mode; the other modes then time every task and summarise. `task_records` false:
  // an allocated or tracked batch that needs no per-task records itself (not Timing::samples)
  // keeps none, and its report lists no tasks. `stop`: an earlier batch's stop source, never
  // requested (take_stop()), for this one; without a state, a new one is made.
  Batch(const Plan& plan, Timing timing, std::size_t batch, std::size_t round, TaskBody& body,
        bool task_records = true, std::optional<Recovery> recovery = std::nullopt,
        std::stop_source stop = std::stop_source(std::nostopstate));

  // Queues the batch on `pool`, all of its chunks or none, allocating nothing. Call once, on a
  // Batch owned by a std::shared_ptr; the pool holds references while chunks are queued or
  // running. Throws ShutdownError, queuing nothing, when the pool is shut down, and
  // ata::Error for an indexed race without a Recovery.
  // The caller lane's chunk (LaneSet::caller_lane()), if the plan gives it a role, is not
  // queued: the batch's caller must run it, on a Lane of its own, once submit() has returned.
  void submit(LaneSet& lanes);
  // Whether the caller lane has a role in this batch (after submit()).
  [[nodiscard]] bool has_caller_role() const noexcept;
  // The lanes submit() queued on: only compared once a task may have destroyed them.
  [[nodiscard]] const LaneSet* lanes() const noexcept { return lanes_; }

  // Requests stop of the batch from any thread, at any time, any number of times. Unless its
  // outcome is already final (or its B results are all in), the batch completes as cancelled:
  // at once if no worker is inside it (on_complete() then runs on this thread), else when the
  // last worker inside leaves. Queued chunks are skipped when reached.
  void cancel() noexcept;

  // Final once on_complete() has been called; pending before.
  [[nodiscard]] Outcome outcome() const noexcept;
  // After completion as Outcome::failed: moves the error out, so that it is destroyed on the
  // calling thread rather than with the batch.
  [[nodiscard]] std::exception_ptr take_error() noexcept;
  // After completion as Outcome::succeeded, once: the report's allocation, busy times and
  // task records, and the result slots in task-index order (left empty when slot j holds task
  // j). O(n) in allocated mode, where the workers wrote the records in place; O(tasks run) in
  // the others.
  void collect(RoundReport& report, std::vector<std::size_t>& slot_order);
  // After completion as Outcome::succeeded, unless Timing::samples: the summary of the times
  // of the tasks accepted from `worker`.
  [[nodiscard]] const WorkerStats& summary(std::size_t worker) const noexcept {
    return logs_[worker].summary;
  }
  [[nodiscard]] Timing timing() const noexcept { return timing_; }
  // After completion as Outcome::succeeded, and collect(): the stopped copies' running times.
  // A fungible race's are its copies still running at the B-th result, each censored at that
  // moment (as the simulator stops them).
  [[nodiscard]] const std::vector<Censored>& censored() const noexcept;
  // After completion, once no worker will enter it again nor is inside: its stop source for
  // the next batch if it was never requested (else one without a state). A task that kept its
  // token past its batch would see the next batch's stop: none should.
  [[nodiscard]] std::stop_source take_stop() noexcept {
    return stop_.stop_requested() ? std::stop_source(std::nostopstate) : std::move(stop_);
  }

  // Late binding (runtime/pacer.hpp): a pull batch that is never queued on the lanes; the
  // pacer hands out its tasks one at a time, under the pacer's own mutex for the first two.
  // The tasks not handed out yet.
  [[nodiscard]] std::size_t unstarted() const noexcept {
    const std::size_t next = next_task_.load(std::memory_order_relaxed);
    return next < batch_ ? batch_ - next : 0;
  }
  // Closed: its tasks are all handed out, or its outcome is decided.
  [[nodiscard]] bool closed() const noexcept {
    return (state_.load(std::memory_order_acquire) & kClosed) != 0;
  }
  // Enters the batch for its next task and sets `task`, closing the batch when that was its
  // last one; false once the batch is closed (complete, cancelled or failed).
  [[nodiscard]] bool enter_for_task(std::size_t& task) noexcept;
  // Runs the task enter_for_task() gave on `worker`, then leaves the batch.
  void run_entered_task(Lane& worker, std::size_t task) noexcept;

  // Tracked batches: the moment the batch's timer was armed for has come (on the deadline
  // timer's thread, or on the blocking caller's: CallerWaiter::wake_at()). Stops the copies
  // past their restart budgets, sends an idle lane to help, or re-arms. Thread-safe; nothing
  // once the batch is complete.
  void on_timer() noexcept;

  QueueEntry& entry(std::size_t worker) noexcept override { return logs_[worker].entry; }
  void run(Lane& worker) noexcept override;
  void abandon(std::size_t worker, const std::exception_ptr& reason) noexcept override;
  void interrupt(const std::exception_ptr& reason) noexcept override;

 protected:
  ~Batch() override;

  // Called exactly once, when the outcome is final and no worker will touch the task body
  // again: on the worker that left last, or on the thread whose cancel(), or whose pool
  // shutdown, closed a batch nobody was inside. Must not block or throw; the batch stays
  // alive during the call (the caller holds a reference).
  virtual void on_complete() noexcept = 0;

 private:
  static constexpr std::size_t kDiscarded = std::numeric_limits<std::size_t>::max();
  // A fungible racer's sample stopped at its restart budget: discarded, its time censored.
  static constexpr std::size_t kRestarted = kDiscarded - 1;
  // Chunk timing: tasks run per call of TaskBody::execute_range between backlog updates.
  static constexpr std::size_t kSettleEvery = 16;
  // Tracked chunks: a lane claims at most this much expected work at once, and at most
  // kMaxOwnChunk tasks of its own share (kMaxChunk of another's, or of a race). Backup copies
  // and take-overs act on tasks of milliseconds; within a span this short, a task claimed
  // early costs no one a wait worth a copy, and the mutex is taken once per span rather than
  // twice per task. Each time a lane takes it, its line moves between the lanes' cores: about
  // 0.6 us per chunk on 2 vCPUs, which chunks of 64 empty tasks paid every 1.3 us.
  static constexpr double kChunkSpan = 20e-6;
  static constexpr std::size_t kMaxChunk = 64;
  static constexpr std::size_t kMaxOwnChunk = 1024;
  // A chunk of the lane's own share that has run this long (its tasks slower than the mean
  // that sized it) gives its unstarted tasks back to the share, where others may take them.
  static constexpr std::chrono::nanoseconds kChunkOverrun{80'000};
  static constexpr std::uint64_t kClosed = std::uint64_t{1} << 63;

  struct RanTask {
    std::size_t task;
    std::chrono::nanoseconds duration;
    std::size_t slot;        // where its result went, or kDiscarded or kRestarted
    TaskClock::Ticks start;  // converted to TaskRecord::start when collected
  };
  // Every worker writes its own log while the others write theirs: a cache line apart. Padded,
  // not aligned: a vector of over-aligned elements is allocated by glibc's memalign, about 700
  // instructions per batch (callgrind), a twentieth of a small batch's cost on its caller.
  struct WorkerLog {
    std::vector<RanTask> ran;  // untracked races (allocated and tracked batches: records_)
    QueueEntry entry;          // this batch's place in the worker's queue
    std::size_t first = 0;     // quotas: the worker runs [first, first + a_i)
    bool races = false;        // quotas and a fungible race: the worker races after its quota
    std::size_t settled = 0;   // allocated: tasks of this share taken off the pool's backlog
    std::chrono::nanoseconds busy{0};  // allocated: the share's time
    WorkerStats summary;               // the accepted tasks' times, unless Timing::samples
    char padding[64];                  // never written: the next log's fields a line away
  };

  // Allocated mode: takes the rest of `worker`'s share off its backlog.
  void settle_share(Lane& worker) noexcept;
  // Quotas (allocated mode, or quotas and a race: mixed).
  [[nodiscard]] bool has_shares() const noexcept {
    return mode_ == Dispatch::allocated || mode_ == Dispatch::mixed;
  }

  // Tracked mode (see Recovery), all under tracked_->mutex unless said otherwise.
  struct Tracked;
  friend class TrackedStateCache;
  enum class Source : std::uint8_t { none, own, pool, retry, take_over, backup, restart };
  // What a lane runs next: tasks [task, end) of its share, of the race or taken over from the
  // back of another share (a chunk), or one copy of `task` (end = task + 1).
  struct Pick {
    Source source = Source::none;
    std::size_t task = 0;
    std::size_t end = 0;
  };
  // The lane runs its share, then retries, take-overs and backup copies, until none is due.
  void run_tracked(Lane& worker);
  [[nodiscard]] Pick pick_task(std::size_t lane);
  // How many tasks a chunk from `available` unstarted ones holds: as many as the lane's
  // learned mean expects within kChunkSpan, at least one (one when the mean is unknown).
  [[nodiscard]] std::size_t chunk_length(std::size_t lane, std::size_t available,
                                         std::size_t most = kMaxChunk) const noexcept;
  // Runs the chunk `pick` without the mutex (`lock`, held on entry and on return, is released
  // meanwhile), taking it only for copies that did not simply win. Returns whether the lane
  // is done with the batch.
  bool run_chunk(Lane& worker, std::unique_lock<BriefLock>& lock, const Pick& pick);
  // With the mutex held, after a copy of `task` ended on `lane`: records that it lost, was
  // restarted, failed (queuing a retry) or won. Returns whether the lane is done with the
  // batch. `in_chunk`: the copy came from a chunk.
  bool end_copy(std::unique_lock<BriefLock>& lock, std::size_t lane, std::size_t task,
                TaskClock::Ticks start, std::chrono::nanoseconds duration,
                std::exception_ptr error, bool in_chunk);
  // A copy of `task` that claimed its result on `lane`, started `start` after the batch's
  // origin: its record, the result, the lane's summary. Without the mutex (the claim makes
  // the task the lane's alone).
  void record_win(std::size_t lane, std::size_t task, std::chrono::nanoseconds start,
                  std::chrono::nanoseconds duration);
  // A copy of `task` whose result is not kept, started at `start`, ran for `ran`: worker time
  // of `lane`, a discarded record and, if `censored` (stopped or lost, not failed), a censored
  // observation.
  void discard_copy(std::size_t lane, std::size_t task, TaskClock::Ticks start,
                    std::chrono::nanoseconds ran, bool censored);
  // Requests stop of every copy of `task` running on a lane other than `winner`.
  void stop_other_copies(std::size_t task, std::size_t winner) noexcept;
  // Whether every index has its result (tracked): the lanes' claims add up to B. Any thread;
  // a lane that has just claimed passes its index as `claimer` (kNoLane otherwise).
  static constexpr std::size_t kNoLane = std::numeric_limits<std::size_t>::max();
  [[nodiscard]] bool all_results_in(std::size_t claimer = kNoLane) const noexcept;
  // At completion, once every index has its result: each lane's summary of its accepted
  // copies (Timing::summaries), from the sums it kept as it claimed them.
  void summarise_tracked() noexcept;
  // Whether lane `lane` may be summoned to help: it has a role, reached the batch, and is out
  // of it now, not summoned already.
  [[nodiscard]] bool can_summon(std::size_t lane) const noexcept;
  // A lane whose own chunk has unstarted tasks left while its copy has run kChunkSpan, longer
  // than a chunk is meant to take: it has stalled (lost its core, most likely), and the
  // caller lane may take the rest over. kNoLane if none; `wait`: the least time until a
  // chunk in progress has stalled (0: one has; +infinity: none).
  [[nodiscard]] std::size_t stalled_chunk(double& wait) const noexcept;
  // The rule's view of the batch now; `helper`: the one lane available, or all idle ones.
  void describe(std::size_t helper) noexcept;
  // Lane `lane`'s learned mean: the policy's when allocated, with this batch's finished
  // copies added (0: unknown).
  [[nodiscard]] double mean_of(std::size_t lane) const noexcept;
  // Arms the timer for the next running copy to become overdue for an idle lane. `starting`:
  // the lane that has just started a copy, whose deadlines cannot come before a timer already
  // armed (kNoLane: a lane left, or the timer fired).
  void arm_timer(std::size_t starting = kNoLane) noexcept;
  // The batch's origin + min_overdue: no copy is overdue, and no lane stuck, sooner (both are
  // floored at min_overdue, and every copy starts after the origin).
  [[nodiscard]] DeadlineTimer::Clock::time_point overdue_floor() const noexcept;
  // Sets the timer for `when`, unless it is set for that moment or sooner already.
  void set_timer(DeadlineTimer::Clock::time_point when) noexcept;
  // The least time until a running copy reaches its lane's restart budget (+infinity: none);
  // with `request`, first requests stop of every copy that has run its budget.
  double restarts_due(bool request) noexcept;
  // Lane `lane`'s restart budget for its next or running copy (Plan::restart_budget).
  [[nodiscard]] double restart_budget(std::size_t lane) const noexcept;
  // Queues this batch on `lane` again (its entry is free), with nothing locked.
  void summon(std::size_t lane) noexcept;
  // Whether a retry waits with no lane to come for it: none inside, summoned, or still to
  // reach its share (a summoned lane never came).
  [[nodiscard]] bool retry_stranded() const noexcept;
  // With the mutex held (`lock`, released to decide): if a summoned lane never came and a retry
  // is stranded, fails the batch with the first such lane's reason (summon_lost).
  void fail_if_stranded(std::unique_lock<BriefLock>& lock) noexcept;
  // A lane other than `failed` that may be summoned to retry a task; npos when none.
  [[nodiscard]] std::size_t retry_lane(std::size_t failed) const noexcept;
  // Ends tracking at completion: what still runs is recorded as stopped and censored.
  void release() noexcept;
  void run_allocated(Lane& worker, TaskContext& ctx);
  void run_greedy(Lane& worker, TaskContext& ctx);
  // A fungible race with restart budgets (racers_): starts a sample on racer `lane`, with a
  // fresh stop source if the last one was stopped (in `ctx`), and a timer for its budget.
  void start_sample(std::size_t lane, TaskContext& ctx);
  // Ends racer `lane`'s sample and disarms its timer; whether the timer stopped it to restart.
  bool end_sample(std::size_t lane) noexcept;
  // Requests stop of a sample's own source when the batch's is requested.
  struct ForwardStop {
    std::stop_source to;
    void operator()() noexcept { to.request_stop(); }
  };
  // On the timer's thread: stops racer `lane`'s sample number `sample` if it still runs.
  void restart_sample(std::size_t lane, std::uint64_t sample) noexcept;
  void run_allocated_timing_chunk(Lane& worker, TaskContext& ctx);
  // Runs task `task` and returns its duration, timed from `since`, which it then moves to the
  // task's end: one clock read per task. A task's time thus includes the scheduler's few
  // nanoseconds of bookkeeping before it. A task that throws leaves `since` as it was.
  std::chrono::nanoseconds run_task(Lane& worker, TaskContext& ctx, std::size_t task,
                                    TaskClock::Ticks& since);
  // The time from `since` to `end` (0 if the ticks went backwards, as a TSC read on another
  // core may by a few ticks).
  [[nodiscard]] std::chrono::nanoseconds elapsed(TaskClock::Ticks since,
                                                 TaskClock::Ticks end) const noexcept {
    return clock_.to_duration(end > since ? end - since : 0);
  }
  // records_[task], field by field: a whole TaskRecord built on the stack and copied stalls
  // the store buffer (its `accepted` stays true, as records_ was made).
  void write_record(std::size_t task, std::size_t worker, std::chrono::nanoseconds duration,
                    std::chrono::nanoseconds start) noexcept {
    TaskRecord& record = records_[task];
    record.task = task;
    record.worker = worker;
    record.duration = duration;
    record.start = start;
  }
  // Appends to worker `worker`'s log; out of memory becomes an ata::Error.
  void record(std::size_t worker, const RanTask& ran);
  // Whether all B results are in, so that stopping the batch now loses nothing.
  [[nodiscard]] bool results_complete() const noexcept;

  // The first decision wins: sets the outcome, requests stop and closes. Returns whether this
  // call decided. Takes the error by value: a worker passing its last reference keeps none
  // that could outlive the caller's own (the exception must die where it is caught).
  bool decide(Outcome outcome, std::exception_ptr error) noexcept;
  [[nodiscard]] bool try_enter() noexcept;
  void leave() noexcept;
  void close() noexcept;
  void complete() noexcept;

  const Dispatch mode_;
  const bool fungible_;  // a fungible race (greedy, or mixed with one): results by arrival
  const Timing timing_;
  const bool keep_records_;  // allocated or tracked: records_ has B entries
  const TaskClock& clock_;
  // TaskRecord::start counts from here (RoundReport::start): a pair of readings, one per clock.
  const TaskClock::Ticks origin_ticks_;
  const std::chrono::steady_clock::time_point origin_;
  const std::size_t batch_;
  const std::size_t round_;
  Allocation allocation_;  // collect() moves it out of an untracked allocated batch
  // Allocated mode: the report's records by task index, each written by the task's worker, so
  // that collecting them is a move rather than a pass over B entries on the caller.
  std::vector<TaskRecord> records_;
  TaskBody& body_;
  std::vector<WorkerLog> logs_;       // logs_[i].ran written by worker i only
  std::size_t caller_lane_ = std::numeric_limits<std::size_t>::max();  // LaneSet::caller_lane()
  std::vector<std::size_t> targets_;  // the workers that get a chunk: quota workers, or racers
  LaneSet* lanes_ = nullptr;          // set by submit(): whose backlog the shares count in

  std::stop_source stop_;
  std::atomic<std::size_t> next_task_{0};     // pull and fungible: the next race index to start
  std::atomic<std::size_t> accepted_{0};      // fungible: result slots claimed (may pass B)
  std::size_t failures_allowed_ = 0;          // fungible: Recovery::retries x B, saturated
  std::atomic<std::size_t> failures_{0};      // fungible: failed attempts so far
  std::atomic<std::size_t> shares_left_{0};   // allocated: shares not yet run to their end
  std::atomic<std::size_t> abandoned_{0};     // pure races: copies the pool abandoned
  std::atomic<std::uint64_t> state_{0};       // kClosed | workers inside
  std::atomic<bool> completed_{false};        // complete() ran (tracked: it may be reached twice)
  std::unique_ptr<Tracked> tracked_;          // tracked mode only
  TaskClock::Ticks last_result_ = 0;          // fungible: when the B-th result was claimed
  std::vector<Censored> surplus_;             // fungible: censored() (collect() fills it)
  // A fungible race with restart budgets: each racer's running sample, which the timer stops.
  struct RacerSample {
    std::mutex mutex;                        // guards the rest
    std::stop_source stop;                   // the running sample's
    std::uint64_t sample = 0;                // which sample runs (odd: one runs)
    bool restarting = false;                 // the timer stopped it at its budget
    std::optional<DeadlineTimer::Id> timer;  // armed for its budget
    std::size_t restarted_in_row = 0;        // its lane's thread only (Plan::restart_budget)
  };
  std::unique_ptr<RacerSample[]> racers_;     // fungible with restart budgets only
  std::vector<double> restart_after_;         // per lane, seconds (+infinity: none)
  DeadlineTimer* restart_timer_ = nullptr;
  std::atomic<std::size_t> restarts_{0};  // fungible: samples restarted

  mutable std::mutex outcome_mutex_;
  std::atomic<Outcome> outcome_{Outcome::pending};  // decided under outcome_mutex_
  std::exception_ptr error_;                        // guarded by outcome_mutex_
};

// The state of a tracked batch: which copy of which task runs where. Guarded by `mutex`
// unless said otherwise. A lane takes the mutex once per *chunk* of its share (or of the
// race's indices), runs the chunk's tasks without it, and takes it again only for what is
// rare: a copy that lost, threw, was stopped to restart, or has backup copies to stop.
struct Batch::Tracked {
  static constexpr std::size_t kIdle = std::numeric_limits<std::size_t>::max();

  // One cache line (or more) each: a lane publishes its running copy per task.
  struct alignas(64) LaneState {
    // Written by the lane only, read by the others (the rule's view, stop requests).
    std::atomic<std::size_t> current{kIdle};       // the task it runs a copy of now
    std::atomic<TaskClock::Ticks> current_start{0};  // since when
    std::atomic<std::size_t> wins{0};              // results it claimed (all_results_in())
    // Its own chunk's tasks: the one it starts, and the end it may run to (0 outside own
    // chunks), which the caller lane lowers, under the mutex, to take over the rest from a
    // lane that stalled mid-chunk. Each side stores its own, then loads the other's, through
    // AsymmetricFence: of the two, at least one sees the other's store.
    std::atomic<std::size_t> started{0};
    std::atomic<std::size_t> limit{0};
    ShiftedMoments won;  // the lane's own: the accepted copies' times, for its summary
    // Under the mutex.
    std::size_t front = 0;  // its share's unstarted tasks are [front, back): it takes the
    std::size_t back = 0;   // front, a lane taking one over takes the back
    bool entered = false;   // it has reached the batch: its queue entry is free again
    bool inside = false;    // in run_tracked()
    bool summoned = false;  // queued again to help, not yet running
    bool in_chunk = false;  // it runs a chunk: between two of its tasks it counts as running
    std::stop_source stop{std::nostopstate};  // the running copy's; replaced once requested
    // This batch's accepted copies on the lane so far, added once per chunk: the rule's means
    // learn from them during the batch, as the simulator's policy does.
    std::int64_t finished_ns = 0;
    std::size_t finished = 0;
    double stuck_after = 0.0;  // seconds the running copy may run before the lane is stuck
    bool helps = false;        // it has a role (a quota or a race): it may help once free
    bool races = false;        // it claims the race's indices once its share is done
    bool restarting = false;   // the running copy was stopped at its restart budget
    bool restart = false;      // the lane starts `restart_task` afresh before anything else
    std::size_t restart_task = 0;
    std::size_t restarted_in_row = 0;  // restarts since its last copy ended otherwise
  };
  struct TaskState {
    std::uint8_t generation = 0;  // the batch it belongs to: another's is stale (state_of())
    std::uint32_t copies = 0;     // copies running now that came from no chunk
    std::uint32_t in_chunks = 0;  // describe()'s scratch: copies from a chunk running now
    std::uint32_t failures = 0;   // attempts that threw
    std::uint32_t failed_on = 0;  // the lane of the last failure
    bool failing = false;         // a copy threw while another ran: no new backup copy of it
  };

  Tracked(Recovery recovery_in, std::size_t lanes, std::size_t tasks)
      : recovery(std::move(recovery_in)),
        rule(recovery.backups),
        lane(lanes),
        task(tasks),
        claims(std::make_unique<std::uint8_t[]>(tasks)),
        ended(std::make_unique<std::uint8_t[]>(tasks)),
        copied(std::make_unique<std::uint8_t[]>(tasks)),
        view(lanes),
        view_task(lanes, kIdle),
        task_capacity(tasks) {}

  // Makes a kept state that of a new batch (of at most task_capacity tasks), as if new. A
  // lane keeps its stop source unless it was stopped (run_chunk replaces a stopped one).
  void reset(Recovery recovery_in);
  // Lets go of what belongs to the batch that ended (its task body's owner, its caller), so
  // that a kept state holds nothing alive.
  void forget_batch() noexcept;

  [[nodiscard]] bool done(std::size_t index) const noexcept {
    return claim(index).load(std::memory_order_acquire) == generation;
  }
  // Task `index`'s state in this batch (a stale one is cleared first). Under the mutex.
  [[nodiscard]] TaskState& state_of(std::size_t index) noexcept {
    TaskState& state = task[index];
    if (state.generation != generation) state = TaskState{.generation = generation};
    return state;
  }
  // The per-task flags, atomic while a batch runs (see claims, ended, copied).
  [[nodiscard]] std::atomic_ref<std::uint8_t> claim(std::size_t index) const noexcept {
    return std::atomic_ref<std::uint8_t>(claims[index]);
  }
  [[nodiscard]] std::atomic_ref<std::uint8_t> ended_flag(std::size_t index) const noexcept {
    return std::atomic_ref<std::uint8_t>(ended[index]);
  }
  [[nodiscard]] std::atomic_ref<std::uint8_t> copied_flag(std::size_t index) const noexcept {
    return std::atomic_ref<std::uint8_t>(copied[index]);
  }

  Recovery recovery;
  BackupRule rule;
  BriefLock mutex;
  std::vector<LaneState> lane;
  // Each batch that reuses the state has the next generation (1 to 255). A per-task flag or
  // state is set for this batch when it holds this generation, so the states and flags of
  // earlier batches need no clearing: the caller would touch B bytes thrice and B states
  // per batch, and the lanes would then fetch those cache lines from its core. They are
  // cleared only when the generations wrap around.
  std::uint8_t generation = 1;
  std::vector<TaskState> task;  // through state_of()
  // Per task, without the mutex, through std::atomic_ref (claim(), ended_flag(),
  // copied_flag()): plain bytes, set to `generation`.
  // claims: set once a copy claimed its result (a read-modify-write wherever two copies may
  // end; a store where a chunk's copy ran alone).
  std::unique_ptr<std::uint8_t[]> claims;
  // The two sides of the handshake between a chunk's copy ending and a backup copy starting
  // (AsymmetricFence): of the two, at least one sees the other's flag, so a chunk's copy that
  // sees no backup started may claim with a store.
  std::unique_ptr<std::uint8_t[]> ended;
  std::unique_ptr<std::uint8_t[]> copied;
  std::vector<BackupWorker> view;     // scratch for the rule
  std::vector<std::size_t> view_task;  // the task each view entry's copy runs
  std::size_t pool_next = 0;           // an indexed race: its next unstarted index (B: none)
  std::vector<std::size_t> retry;      // tasks waiting for another attempt
  std::vector<TaskRecord> discarded;   // copies that lost, failed attempts
  std::vector<Censored> censored;      // the stopped copies' times
  std::size_t takeovers = 0;
  std::size_t backup_copies = 0;
  std::size_t retried = 0;
  std::size_t restarts = 0;
  std::optional<DeadlineTimer::Id> timer;  // armed for `timer_at`
  DeadlineTimer::Clock::time_point timer_at;
  bool released = false;  // complete: nothing more is recorded, no timer armed
  // Why a summoned lane never came (shut down, its work refused or dropped unrun): the
  // batch's error if a retry is left with no lane to take it.
  std::exception_ptr summon_lost;
  const std::size_t task_capacity;  // the per-task arrays' length
};

// Tracked states kept for the next batches. A scheduler runs batch after batch of one shape,
// and a new state costs a dozen allocations: most of what tracking adds to a small batch.
// Thread-safe: batches start and end on any thread.
class TrackedStateCache {
 public:
  TrackedStateCache() { kept_.reserve(kKept); }

 private:
  friend class Batch;
  // States kept at most: one per batch in flight, for a few at once.
  static constexpr std::size_t kKept = 4;
  // A state for more tasks is freed: there the per-task work dwarfs the allocations, and a
  // kept state would hold megabytes.
  static constexpr std::size_t kMostTasks = 4096;

  // A kept state for `lanes` lanes and at least `tasks` tasks, removed; nullptr when none.
  [[nodiscard]] std::unique_ptr<Batch::Tracked> take(std::size_t lanes, std::size_t tasks) noexcept;
  // Keeps `state` (of a destroyed batch) if there is room, else frees it.
  void keep(std::unique_ptr<Batch::Tracked> state) noexcept;

  std::mutex mutex_;
  std::vector<std::unique_ptr<Batch::Tracked>> kept_;  // capacity kKept: keeping never allocates
};

}  // namespace ata::runtime::detail

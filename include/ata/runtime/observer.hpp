#pragma once
/// @file
/// What a BatchScheduler tells an observer: each batch's start with its plan, its end with
/// its report (every task's worker, start and duration), and what the policy learned from it;
/// and what a TaskStream tells it: each stream's start, each delivered task, its end.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "ata/core/plan.hpp"
#include "ata/core/worker_stats.hpp"
#include "ata/runtime/round_report.hpp"
#include "ata/runtime/stream_report.hpp"

namespace ata::runtime {

/// How an observed batch ended.
enum class BatchOutcome : std::uint8_t {
  succeeded,  ///< B results: BatchEnd::report is set
  failed,     ///< a task's exception, a shutdown, or a report that could not be allocated
  cancelled,  ///< async_run()'s cancellation came first
  timed_out,  ///< its deadline (BatchOptions::deadline) passed first
};

/// "succeeded", "failed", "cancelled" or "timed_out".
[[nodiscard]] const char* outcome_name(BatchOutcome outcome) noexcept;

/// A batch about to be queued on its lanes.
struct BatchStart {
  std::size_t round = 0;  ///< the scheduler's batch number, 1-based (RoundReport::round)
  std::size_t tasks = 0;  ///< B
  /// The plan it runs, after quarantine moved a stuck lane's quotas (under late binding: the
  /// indexed race the pacer hands out). Valid during the call only.
  const Plan& plan;
  /// When run() or async_run() was called (RoundReport::wall counts from it).
  std::chrono::steady_clock::time_point called;
};

/// A batch that had its BatchStart, now over.
struct BatchEnd {
  std::size_t round = 0;
  std::size_t tasks = 0;
  BatchOutcome outcome = BatchOutcome::succeeded;
  /// Succeeded: the report the caller gets, wall time included; its tasks are the batch's task
  /// spans (TaskRecord: index, worker, start from report->start, duration, accepted). The
  /// copies of one index are the records with the same `task`: one unless the batch was
  /// tracked (backup copies, retries, restarts), which lists the accepted copies first, by
  /// index, then the discarded ones. Null otherwise. Valid during the call only.
  const RoundReport* report = nullptr;
};

/// A task stream about to queue its first tasks (TaskStream::run(), async_run_stream()).
struct StreamStart {
  std::size_t stream = 0;  ///< the TaskStream's stream number, 1-based (TaskStream::streams())
  /// The workers kept busy at first (StreamOptions::workers(), or every lane), by lane index.
  /// Valid during the call only.
  std::span<const std::size_t> workers;
  std::optional<std::uint64_t> stale_bound;  ///< StreamOptions::stale_bound()
  /// When the stream was started: StreamTaskRecord::start and StreamReport::wall count from it.
  std::chrono::steady_clock::time_point called;
};

/// A stream that had its StreamStart, now over: every task it started was delivered, each
/// told to on_stream_task() before this.
struct StreamFinish {
  std::size_t stream = 0;
  /// It ended with an error (the consumer threw, the lanes shut down or could not post):
  /// run() throws it, async_run_stream() completes with it, and report.end says nothing.
  bool failed = false;
  /// What it did, wall time and version included: the report run() returns (on success).
  /// Valid during the call only.
  const StreamReport& report;
};

/// Watches a BatchScheduler's batches (BatchScheduler::set_observer()), a TaskStream's
/// streams (TaskStream::set_observer()), or both: one observer (a TraceRecorder, the
/// metrics) may be set on a scheduler and a stream over the same lanes.
///
/// @code
/// class Spans final : public ata::runtime::Observer {
///  public:
///   void on_batch_end(const ata::runtime::BatchEnd& end) noexcept override {
///     if (end.report == nullptr) return;  // failed, cancelled or timed out
///     std::lock_guard lock(mutex_);        // batches may end on several threads at once
///     for (const ata::runtime::TaskRecord& t : end.report->tasks) {
///       if (spans_.size() < spans_.capacity()) spans_.push_back(t);  // preallocated
///     }
///   }
///  private:
///   std::mutex mutex_;
///   std::vector<ata::runtime::TaskRecord> spans_ = [] {
///     std::vector<ata::runtime::TaskRecord> v;
///     v.reserve(1 << 20);
///     return v;
///   }();
/// };
/// Spans spans;
/// scheduler.set_observer(&spans);
/// @endcode
///
/// The task spans come after the batch, from the records it keeps anyway (RoundReport::tasks,
/// whose TaskRecord::start each worker writes beside the duration), not as live per-task
/// calls: without an observer the scheduler tests one pointer per batch, and with one it adds
/// three virtual calls per batch, nothing per task (docs/timelines.md measures it). With SchedulerOptions::set_task_records(false) an allocated
/// batch keeps no records, and its report lists no tasks.
///
/// For one batch the calls come in order, on_batch_start(), then, if it succeeded,
/// on_learned(), then on_batch_end(), which follows every on_batch_start() exactly once (but
/// for a batch of async_run() whose executor is destroyed before the batch finishes). A batch
/// refused before it runs (its plan() threw or cannot run here) has no event.
///
/// Streams are told as they run, task by task, since a stream has no end to wait for:
///
/// @code
/// class Staleness final : public ata::runtime::Observer {
///  public:
///   void on_stream_task(std::size_t /*stream*/,
///                       const ata::runtime::StreamTaskRecord& t) noexcept override {
///     // under the stream's lock: one task at a time per stream, but streams may overlap
///     delay_sum_.fetch_add(t.delay, std::memory_order_relaxed);
///     if (!t.accepted) rejected_.fetch_add(1, std::memory_order_relaxed);
///   }
///  private:
///   std::atomic<std::uint64_t> delay_sum_{0};
///   std::atomic<std::size_t> rejected_{0};
/// };
/// Staleness staleness;
/// stream.set_observer(&staleness);
/// @endcode
///
/// For one stream: on_stream_start(), then one on_stream_task() per task it started, in the
/// order the consumer was called, then on_stream_end(), exactly once (for async_run_stream()
/// too: the end is told on the lanes, before the handler is posted). A stream refused
/// before it starts (a worker out of range, run() called from a task of its lanes) has no
/// event. Without an observer a stream tests one pointer per delivery; with one it makes one
/// virtual call per delivered task, under the stream's lock, which the observer's own work
/// lengthens for every worker of the stream (docs/timelines.md measures it).
///
/// Thread-safety: batches run concurrently (several callers of run(), async_run()), and the
/// methods may then be called concurrently, from different threads, for different batches;
/// an observer of overlapping batches must synchronise itself. So may streams, with each
/// other and with batches; the events of one stream never overlap one another. The methods
/// are noexcept and must not block for long: they run on the batch's or the stream's path.
class Observer {
 public:
  virtual ~Observer() = default;

  /// On the thread that submits the batch (the caller of run() or async_run(), or
  /// async_run()'s executor for a batch that waited for a slot), before its tasks are queued;
  /// the policy's mutex is not held.
  virtual void on_batch_start(const BatchStart& /*start*/) noexcept {}
  /// After the policy observed a successful batch's durations: `learned` is
  /// Policy::all_stats() (each worker's learned mean, count, censored copies), valid during the
  /// call only. Called under policy.mutex(), so never concurrently with another on_learned()
  /// of the same policy, and in the order the policy learned: do not call the policy's locking
  /// methods from here.
  virtual void on_learned(std::size_t /*round*/,
                          std::span<const WorkerStats> /*learned*/) noexcept {}
  /// On the thread that hands the batch's outcome to its caller (run()'s caller, async_run()'s
  /// handler executor), before the caller gets it.
  virtual void on_batch_end(const BatchEnd& /*end*/) noexcept {}

  /// On the thread that starts the stream (the caller of TaskStream::run() or
  /// async_run_stream()), before its first task is queued; no lock held.
  virtual void on_stream_start(const StreamStart& /*start*/) noexcept {}
  /// One task of stream `stream` delivered: on the worker that ran it, right after the
  /// consumer returned its verdict (an exception from the consumer counts as a rejection),
  /// under the stream's lock, so never concurrently with another event of the same stream, and
  /// before the worker's next task starts. `task` is valid during the call only.
  virtual void on_stream_task(std::size_t /*stream*/,
                              const StreamTaskRecord& /*task*/) noexcept {}
  /// On the thread that completes the stream (the worker of its last delivery, the caller of
  /// run() after a stop request, the deadline's timer thread, a canceller, or the starter
  /// when the lanes refuse it or its deadline is 0), under the stream's lock, before run()
  /// returns or async_run_stream()'s handler is posted.
  virtual void on_stream_end(const StreamFinish& /*end*/) noexcept {}

 protected:
  Observer() = default;
  Observer(const Observer&) = default;
  Observer& operator=(const Observer&) = default;
};

/// Tells several observers each event, in the order given: a scheduler or a stream has one
/// observer, and a trace and the metrics may both want its batches and streams.
///
/// @code
/// ata::runtime::TraceRecorder trace(20, 20);
/// ata::runtime::ObserverList both({&trace, &metrics});
/// scheduler.set_observer(&both);
/// @endcode
///
/// Thread-safety: as safe as the observers it holds (it adds no state of its own after
/// construction).
class ObserverList final : public Observer {
 public:
  /// Borrows `observers` (none null), which must outlive the list.
  explicit ObserverList(std::vector<Observer*> observers) : observers_(std::move(observers)) {}

  void on_batch_start(const BatchStart& start) noexcept override {
    for (Observer* observer : observers_) observer->on_batch_start(start);
  }
  void on_learned(std::size_t round, std::span<const WorkerStats> learned) noexcept override {
    for (Observer* observer : observers_) observer->on_learned(round, learned);
  }
  void on_batch_end(const BatchEnd& end) noexcept override {
    for (Observer* observer : observers_) observer->on_batch_end(end);
  }
  void on_stream_start(const StreamStart& start) noexcept override {
    for (Observer* observer : observers_) observer->on_stream_start(start);
  }
  void on_stream_task(std::size_t stream, const StreamTaskRecord& task) noexcept override {
    for (Observer* observer : observers_) observer->on_stream_task(stream, task);
  }
  void on_stream_end(const StreamFinish& end) noexcept override {
    for (Observer* observer : observers_) observer->on_stream_end(end);
  }

 private:
  std::vector<Observer*> observers_;
};

}  // namespace ata::runtime

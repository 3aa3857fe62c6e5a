#pragma once
/// @file
/// What a BatchScheduler tells an observer: each batch's start with its plan, its end with
/// its report (every task's worker, start and duration), and what the policy learned from it.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "ata/core/plan.hpp"
#include "ata/core/worker_stats.hpp"
#include "ata/runtime/round_report.hpp"

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

/// Watches a BatchScheduler's batches (BatchScheduler::set_observer()).
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
/// Thread-safety: batches run concurrently (several callers of run(), async_run()), and the
/// methods may then be called concurrently, from different threads, for different batches;
/// an observer of overlapping batches must synchronise itself. The methods are noexcept and
/// must not block for long: they run on the batch's path.
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

 protected:
  Observer() = default;
  Observer(const Observer&) = default;
  Observer& operator=(const Observer&) = default;
};

/// Tells several observers each event, in the order given: a scheduler has one observer,
/// and a trace and the metrics may both want its batches.
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

 private:
  std::vector<Observer*> observers_;
};

}  // namespace ata::runtime

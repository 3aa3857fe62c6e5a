#pragma once
/// @file
/// The batch scheduler: B results of a task from a pool of workers, dispatched as the policy
/// says, with every measured task time fed back to the policy.

#include <chrono>
#include <concepts>
#include <cstddef>
#include <memory>
#include <new>
#include <type_traits>
#include <vector>

#include "ata/core/policy.hpp"
#include "ata/runtime/batch_options.hpp"
#include "ata/runtime/batch_result.hpp"
#include "ata/runtime/caller_lane_pool.hpp"
#include "ata/runtime/detail/batch_operation.hpp"
#include "ata/runtime/detail/task_body.hpp"
#include "ata/runtime/observer.hpp"
#include "ata/runtime/round_report.hpp"
#include "ata/runtime/task_context.hpp"
#include "ata/runtime/lanes.hpp"
#include "ata/runtime/worker_pool.hpp"

namespace ata::runtime {

namespace detail {
struct SchedulerEngine;
}

/// What a task callable returns when the scheduler calls it.
template <class Task>
using TaskResult = std::invoke_result_t<Task&, const TaskContext&>;

/// Runs batches on Lanes (a WorkerPool, Asio executors, oneTBB arenas), driven by any
/// ata::Policy.
///
/// @code
/// ata::runtime::WorkerPool pool(4);
/// ata::AtaEmpiricalPolicy policy(4, /*eta=*/1.0);
/// ata::runtime::BatchScheduler scheduler(pool, policy);
/// for (int round = 0; round < 100; ++round) {
///   auto [gradients, report] = scheduler.run(23, [&](const ata::runtime::TaskContext& ctx) {
///     return sample_gradient(ctx.task());
///   });
///   // gradients[j] is task j's result; report.allocation is what each worker ran
/// }
/// @endcode
///
/// Each batch runs the policy's plan (Policy::plan(), ata::Plan):
/// - quotas (Dispatch::allocated: ATA, ATA-Empirical, OFTA, UTA): worker i runs tasks
///   [a_0 + ... + a_{i-1}, ... + a_i) in a row, as one chunk.
/// - a fungible race (Dispatch::greedy: GTA over every worker, or a race of a subset): every
///   racer runs tasks until B results are accepted, the first B to finish; the tasks still
///   running then get a stop request and their results are discarded, but their time counts
///   as worker time. Other workers get nothing.
/// - an indexed race (Dispatch::pull): the racers pull exactly B tasks from a shared counter.
/// - quotas and an indexed race (Dispatch::mixed): the quota workers run their shares as
///   above, the racers claim the rest, [a_0 + ... + a_{n-1}, B), one by one (a tracked
///   batch, below).
/// What runs on threads of what a plan may carry, as the simulator (lib/sim/simulation.cpp)
/// interprets it:
/// - quotas with backups, retries or restart budgets: a tracked batch (Stragglers below). A
///   plan's own backups and retries (Plan::backups(), Plan::retries()) override the
///   SchedulerOptions defaults for that batch; the scheduler's options fill what the plan
///   leaves unset, as the simulator's BackupOptions do. An unset
///   BackupOptions::min_overdue is SchedulerOptions::kDefaultMinOverdue on threads. A copy on
///   worker i that has run Plan::restart_after(i) gets a stop request, is recorded as a
///   discarded TaskRecord and reported to the policy as censored
///   (Policy::observe_censored()), and the same task starts afresh on worker i once that copy
///   has returned; whatever it returns is discarded (RoundReport::restarts).
/// - an indexed race, alone or with quotas, with backups, retries or restart budgets: tracked
///   too. The racers claim the race's indices one by one; once none is left, a free racer (and
///   a quota worker done with its share) runs a take-over of an unstarted quota task or a
///   backup copy of an overdue task by the same rule, the first copy to finish giving the
///   result.
/// - a fungible race: backups have nothing to add (its racers compute until any B results
///   are in); a failed attempt is replaced by a new task while retries last; a sample past its
///   racer's restart budget gets a stop request, is discarded (its time a censored
///   observation) and replaced by a fresh one.
/// Refused with ata::Error before anything runs, never ignored: quotas with a fungible race.
/// docs/runtime.md ("Options") has every option against every kind of plan.
/// Each task is timed on its worker (its slowdown included) with the invariant TSC where the
/// CPU has one, calibrated against std::chrono::steady_clock, else with steady_clock itself
/// (ATA_TASK_CLOCK=steady in the environment forces steady_clock). While it runs, each worker
/// summarises the times of its accepted tasks (count, mean, variance); after the batch the
/// policy absorbs one summary per worker (Policy::observe_summary()), so learning costs O(n)
/// per batch, not O(B), and gives the statistics of observing every task to rounding. A
/// policy whose needs_every_sample() is true (ATA-Auto) observes every accepted task's
/// duration instead. Either way it learns from exactly what ran; a stopped surplus task
/// teaches nothing: its time was cut short. SchedulerOptions::set_time_chunks() trades the
/// per-task times of untracked quotas for one clock read per chunk.
///
/// Stragglers (SchedulerOptions::set_backups(), set_retries(); docs/stragglers.md): in an
/// allocated batch (and an indexed race), a worker done with its share
/// takes over tasks other shares have not started and runs backup copies of tasks running
/// past a multiple of their worker's learned mean (ata::BackupRule, the simulator's rule); the
/// first copy to finish gives the result, exactly one per index; the others are stopped and the
/// policy hears Policy::observe_censored() for them. A throwing task may be retried on another
/// worker. A worker whose task runs far past its mean is quarantined (Lanes::stuck_lanes()).
///
/// A batch is complete when its tasks are: B results accepted (or a failure) and no worker
/// inside its task any more (but see run() for a task handed over as a std::shared_ptr). It does
/// not wait for workers that never got to it: in pull and greedy modes, a worker busy elsewhere
/// that reaches the batch's chunk afterwards skips it.
///
/// On a CallerLanePool, run() runs the caller lane's part on the
/// calling thread before it waits, and the caller then takes over unstarted tasks of lanes
/// that have not reached the batch (quotas are tracked on such a pool, whatever the backups).
///
/// Cost: B is at most kMaxBatch. A tracked batch (quotas or an indexed race with backups,
/// retries or restarts; quotas with an indexed race; quotas on a pool with a caller lane)
/// takes its mutex once per chunk of a lane's tasks (a chunk holds about 20 us of them) and
/// keeps about 32 bytes more per task (and a record per discarded copy). A batch keeps about 40 bytes per
/// task that ran (its TaskRecord; 32 more in pull and greedy modes for its log entry, 16 more in
/// greedy mode) plus, per result, an std::optional slot and the returned value, and a few cache
/// lines per worker.
///
/// Thread-safety: run() may be called from any number of threads at once (not from a task of
/// the same pool: that throws ata::Error). Concurrent batches are correct and share the
/// workers first come, first served: each worker runs its chunks FIFO, and every worker sees
/// the batches in the same order, so a batch waits behind the chunks queued before it on its
/// workers. Every call to the policy is made under policy.mutex(), so several schedulers may
/// share one policy; anyone else using the policy while batches run must hold that lock too.
class BatchScheduler {
 public:
  /// The largest batch run() accepts, 2^22 = 4,194,304 tasks: its bookkeeping alone (see
  /// above) is about 270 MB. Larger batches are better split into several.
  static constexpr std::size_t kMaxBatch = std::size_t{1} << 22;

  /// Borrows `lanes` and `policy`, which must outlive the scheduler; binds each batch when it
  /// arrives. Throws ata::InvalidArgument when policy.workers() != lanes.size().
  BatchScheduler(Lanes& lanes, Policy& policy, const SchedulerOptions& options = {});
  /// As above, with late binding (LateBindingOptions). Throws ata::InvalidArgument for lanes
  /// with a caller lane (reached only through a Lanes&: the overload below rules it out).
  BatchScheduler(Lanes& lanes, Policy& policy, const LateBindingOptions& options);
  /// Late binding hands each task to the lane whose thread should run it next, when it should;
  /// a caller lane has no thread, and its caller is there only while its own batch runs.
  BatchScheduler(CallerLanePool& lanes, Policy& policy, const LateBindingOptions& options) = delete;
  /// Batches still in flight must have completed (their waiters returned, their handlers
  /// run) before the scheduler is destroyed.
  ~BatchScheduler();
  BatchScheduler(const BatchScheduler&) = delete;
  BatchScheduler& operator=(const BatchScheduler&) = delete;

  /// Runs B = `batch` tasks and returns their results by task index, with the round report.
  /// `task` is called as task(const TaskContext&) on several workers at once, so it must be
  /// safe to call concurrently; it returns a movable value or void. Thread-safe.
  ///
  /// run() returns only when no worker runs `task` any more, and no worker calls it
  /// afterwards, so `task` may capture locals by reference: a copy that ignores its stop
  /// request (a stopped backup, a stuck worker's task) is waited for, and a task that never
  /// returns makes run() wait forever. To return as soon as every index has a result, hand
  /// the task over as a std::shared_ptr (the overload below). A task passed as an rvalue is
  /// not taken as handed over: a lambda literal is an rvalue but often captures by reference.
  ///
  /// Throws:
  /// - ata::InvalidArgument for batch = 0 or batch > kMaxBatch;
  /// - ata::Error when the policy's plan cannot run a batch of B tasks here (a role per lane,
  ///   quotas summing to B or racers for the rest, and nothing the threads refuse: see the
  ///   class comment; the round still counts: the policy started it), or when the batch's
  ///   bookkeeping cannot be allocated; whatever the policy's plan() throws (the round then
  ///   does not count, for the policy nor the scheduler);
  /// - ShutdownError when the pool is shut down before or while the batch runs;
  /// - the first exception a task threw. The batch is then abandoned: its other tasks get a
  ///   stop request, unstarted ones are skipped, the policy observes nothing of it; the pool
  ///   stays usable. In greedy mode a task ending after B results are in is surplus: its
  ///   exception is discarded with its result.
  /// If the policy throws while observing the batch's durations, run() still returns the
  /// results, with the exception in report.learning_error.
  template <class Task>
  requires std::invocable<Task&, const TaskContext&> BatchResult<TaskResult<Task>> run(
      std::size_t batch, Task&& task, const BatchOptions& options = {}) {
    using Result = TaskResult<Task>;
    static_assert(std::is_void_v<Result> ||
                      (std::is_object_v<Result> && std::is_move_constructible_v<Result>),
                  "a task returns void or a movable value (not a reference)");
    check_batch(batch, options);  // before B sizes anything
    detail::TypedTaskBody<std::remove_reference_t<Task>, Result> body(task, batch, lanes_.size());
    BatchResult<Result> result;
    std::vector<std::size_t> slot_order;
    std::shared_ptr<detail::BlockingOperation> operation;
    try {
      operation = std::make_shared<detail::BlockingOperation>(*this, batch, body, options);
    } catch (const std::bad_alloc&) {
      detail::throw_out_of_memory(batch, "operation");
    }
    operation->run(result.report, slot_order);
    if constexpr (!std::is_void_v<Result>) result.values = body.take(slot_order);
    return result;
  }

  /// As run() above, for a task handed over as a shared pointer: the batch keeps `task` (and
  /// its result slots) alive for as long as a copy of it runs. With backups or retries on,
  /// run() then returns as soon as every task index has a result, while late copies (a
  /// stopped backup that ignores its stop request, a stuck worker's task) finish in the
  /// background; their results are discarded. Throws as run() above; ata::InvalidArgument for
  /// a null `task`.
  template <class Task>
  requires std::invocable<Task&, const TaskContext&> BatchResult<TaskResult<Task>> run(
      std::size_t batch, std::shared_ptr<Task> task, const BatchOptions& options = {}) {
    using Result = TaskResult<Task>;
    static_assert(std::is_void_v<Result> ||
                      (std::is_object_v<Result> && std::is_move_constructible_v<Result>),
                  "a task returns void or a movable value (not a reference)");
    check_batch(batch, options);
    if (!task) throw InvalidArgument("run(): the task handed over is a null pointer");
    // The task and its result slots, owned together by the caller and the batch.
    struct Owned {
      Owned(std::shared_ptr<Task> t, std::size_t b, std::size_t n)
          : task(std::move(t)), body(*task, b, n) {}
      std::shared_ptr<Task> task;
      detail::TypedTaskBody<Task, Result> body;
    };
    std::shared_ptr<Owned> owned;
    std::shared_ptr<detail::BlockingOperation> operation;
    try {
      owned = std::make_shared<Owned>(std::move(task), batch, lanes_.size());
      operation =
          std::make_shared<detail::BlockingOperation>(*this, batch, owned->body, options, owned);
    } catch (const std::bad_alloc&) {
      detail::throw_out_of_memory(batch, "operation");
    }
    BatchResult<Result> result;
    std::vector<std::size_t> slot_order;
    operation->run(result.report, slot_order);
    if constexpr (!std::is_void_v<Result>) result.values = owned->body.take(slot_order);
    return result;
  }

  /// The policy driving the batches (hold policy().mutex() to use it while batches run).
  [[nodiscard]] Policy& policy() noexcept { return policy_; }
  /// Where the batches run.
  [[nodiscard]] Lanes& lanes() noexcept { return lanes_; }
  /// Tells `observer` (borrowed; nullptr: none, the default) of every batch started from now
  /// on (Observer). Not synchronised with run() or async_run(): set it while no batch is in
  /// flight, and keep the observer alive until the batches it was told of have ended.
  void set_observer(Observer* observer) noexcept { observer_ = observer; }
  [[nodiscard]] Observer* observer() const noexcept { return observer_; }
  /// Batches this scheduler started so far. Thread-safe.
  [[nodiscard]] std::size_t rounds() const;
  /// Batches admitted and not yet complete (at most the options' max_in_flight()).
  /// Thread-safe.
  [[nodiscard]] std::size_t in_flight() const;

  /// Throws ata::InvalidArgument for batch = 0 or batch > kMaxBatch, or a negative
  /// options.deadline.
  static void check_batch(std::size_t batch, const BatchOptions& options = {});

 private:
  friend class detail::BatchOperation;

  Lanes& lanes_;
  Policy& policy_;
  const SchedulerOptions options_;
  std::unique_ptr<detail::SchedulerEngine> engine_;
  std::size_t rounds_ = 0;  // guarded by policy_.mutex()
  Observer* observer_ = nullptr;
};

}  // namespace ata::runtime

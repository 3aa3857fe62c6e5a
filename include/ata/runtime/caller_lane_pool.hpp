#pragma once
/// @file
/// Worker threads plus one more worker: each blocking batch's caller.

#include <chrono>
#include <cstddef>

#include "ata/runtime/lanes.hpp"
#include "ata/runtime/pool_options.hpp"

namespace ata::runtime {

/// A WorkerPool whose last worker, n - 1, is not a thread but each batch's caller: the *caller
/// lane*. A blocking BatchScheduler::run() runs that worker's share (or races as it) inline
/// before it waits for the rest, and the policy learns it like any other worker.
///
/// @code
/// // Three threads (workers 0-2) and the caller of run() (worker 3).
/// ata::runtime::CallerLanePool pool(3);
/// ata::AtaEmpiricalPolicy policy(pool.size(), 1.0);  // pool.size() == 4
/// ata::runtime::BatchScheduler scheduler(pool, policy);
/// auto squares = scheduler.run(10, [](const ata::runtime::TaskContext& ctx) {
///   return ctx.task() * ctx.task();
/// });
/// @endcode
///
/// Why: on a busy machine the caller is on a core when its batch starts, while a sleeping
/// worker wakes a scheduler slice late. Quotas on this pool are always tracked, so once its
/// own part is done the caller takes over the tasks of workers that have not started theirs,
/// and the rest of a chunk whose worker has stalled in it (its task has run 20 us, what a
/// whole chunk is sized for: it lost its core), and a small batch need not wait for a wake-up
/// at all. A batch of quotas whose B tasks the
/// caller is expected to run within kCallerAloneWork, by its learned mean, runs on the caller
/// alone: waking a thread for it would cost more than the whole batch. docs/runtime.md ("The
/// caller as a lane") measures it.
///
/// Concurrent callers each run their own batch's share: worker n - 1 is a role, "this batch's
/// caller", not a thread. A caller has no identity the pool could give it, so the caller lane
/// takes no slowdown and no CPU pinning: the options describe the threads only. Late binding and
/// task streams keep each lane busy from a thread of its own, which the caller lane lacks:
/// `BatchScheduler(CallerLanePool&, Policy&, const LateBindingOptions&)` and
/// `TaskStream(CallerLanePool&)` do not compile. async_run() batches leave the caller lane out
/// (their caller does not wait): the threads run them.
///
/// Thread-safety and shutdown: as WorkerPool.
class CallerLanePool final : public Lanes {
 public:
  /// About what a sleeping thread takes to wake, and what a lane claims as one chunk of a
  /// tracked batch (see the class comment).
  static constexpr std::chrono::nanoseconds kCallerAloneWork = std::chrono::microseconds(20);

  /// `threads` threads without slowdown, and the caller lane: threads + 1 workers. Throws
  /// ata::InvalidArgument for 0 threads.
  explicit CallerLanePool(std::size_t threads);
  /// Workers 0 to threads.workers() - 1 are threads as `threads` describes them (slowdowns,
  /// pinning, seed, idle polling, which the caller also uses while it waits); worker
  /// threads.workers() is the caller lane. Throws as WorkerPool's constructor.
  explicit CallerLanePool(const PoolOptions& threads);
  /// shutdown(), as WorkerPool's destructor.
  ~CallerLanePool() override;
  CallerLanePool(const CallerLanePool&) = delete;
  CallerLanePool& operator=(const CallerLanePool&) = delete;
};

}  // namespace ata::runtime

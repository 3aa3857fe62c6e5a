#pragma once
/// @file
/// n worker threads with a stable identity each and a queue of their own.

#include <cstddef>

#include "ata/runtime/lanes.hpp"
#include "ata/runtime/pool_options.hpp"

namespace ata::runtime {

/// Lanes on threads of their own: the default place a BatchScheduler runs batches.
///
/// @code
/// ata::runtime::WorkerPool pool(4);                 // 4 threads, no slowdown
/// ata::AtaEmpiricalPolicy policy(pool.size(), 1.0);
/// ata::runtime::BatchScheduler scheduler(pool, policy);
/// auto squares = scheduler.run(10, [](const ata::runtime::TaskContext& ctx) {
///   return ctx.task() * ctx.task();
/// });
/// pool.shutdown();                                  // or let the destructor do it
/// @endcode
///
/// Worker (lane) i is always the same thread, so a policy can learn its speed. Each worker owns a
/// FIFO queue of chunks: a chunk is one batch's whole share for that worker (its a_i tasks,
/// or its part of a pull or greedy loop), handed over in one go. Batches submitted from
/// several threads queue behind each other on every worker in the same order. Queuing a batch
/// allocates nothing, so a batch reaches all its workers or (when the pool is shut down) none.
///
/// Shutting down (shutdown() or the destructor):
/// - refuses new batches (they throw ShutdownError);
/// - fails, at once and with ShutdownError, every batch still waiting in the queues;
/// - requests stop of every batch running on a worker, which then fails with ShutdownError
///   (unless its B results were already in): a task polling TaskContext::stop_requested()
///   ends early, a slowdown's delay is cut short, and the worker skips the rest of its chunk;
/// - waits for each worker to finish the task it is in, and joins the threads. A task that
///   ignores its stop request is waited for: shutdown() takes as long as that task does.
/// It allocates nothing and throws nothing (except the error below), so it cannot leave a
/// batch waiting forever.
///
/// Thread-safety: every method may be called from any thread. shutdown() on one of the
/// pool's own workers (inside a task) throws ata::Error, since it would wait for itself. The
/// destructor may run inside a task (a task dropping the last owner of its pool): it then
/// shuts down as above but does not wait for the calling worker, whose thread exits when its
/// task returns.
class WorkerPool final : public Lanes {
 public:
  /// `workers` threads without slowdown. Throws ata::InvalidArgument for 0.
  explicit WorkerPool(std::size_t workers);
  /// Threads as `options` describe them. Throws ata::InvalidArgument for a CPU the process
  /// may not use, and std::system_error if a thread cannot start.
  explicit WorkerPool(const PoolOptions& options);
  /// shutdown(); see the class comment for a destructor running inside a task.
  ~WorkerPool() override;
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;
};

}  // namespace ata::runtime

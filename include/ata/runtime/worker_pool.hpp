#pragma once
/// @file
/// n worker threads with a stable identity each and a queue of their own.

#include <cstddef>
#include <memory>

#include "ata/runtime/pool_options.hpp"

namespace ata::runtime {

class BatchScheduler;
namespace detail {
class PoolCore;
}

/// The threads a BatchScheduler runs batches on.
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
/// Worker i is always the same thread, so a policy can learn its speed. Each worker owns a
/// FIFO queue of chunks: a chunk is one batch's whole share for that worker (its a_i tasks,
/// or its part of a pull or greedy loop), handed over in one go. Batches submitted from
/// several threads queue behind each other on every worker in the same order.
///
/// Shutting down fails every batch that still has a queued chunk with ShutdownError (its
/// tasks already running stop at the next task boundary), lets chunks already running
/// finish, and joins the threads. Later submissions throw ShutdownError.
///
/// Thread-safety: every method may be called from any thread, except that shutdown() and the
/// destructor must not run on one of the pool's own workers.
class WorkerPool {
 public:
  /// `workers` threads without slowdown. Throws ata::InvalidArgument for 0.
  explicit WorkerPool(std::size_t workers);
  /// Threads as `options` describe them. Throws ata::InvalidArgument for a CPU the process
  /// may not use, and std::system_error if a thread cannot start.
  explicit WorkerPool(const PoolOptions& options);
  /// shutdown().
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  /// Number of workers n.
  [[nodiscard]] std::size_t size() const noexcept;
  /// The configuration the pool was built with.
  [[nodiscard]] const PoolOptions& options() const noexcept;
  /// Chunks waiting in the workers' queues, not counting those running.
  [[nodiscard]] std::size_t queued_chunks() const;
  /// Whether shutdown() has started.
  [[nodiscard]] bool is_shut_down() const noexcept;

  /// Fails the batches with queued work (ShutdownError), waits for running chunks, joins the
  /// threads. Idempotent; concurrent calls all return once the threads are joined. Throws
  /// ata::Error when called from one of the pool's workers, which would wait for itself.
  void shutdown();

 private:
  friend class BatchScheduler;
  std::unique_ptr<detail::PoolCore> core_;
};

}  // namespace ata::runtime

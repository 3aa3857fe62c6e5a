#pragma once
// The worker threads behind WorkerPool: each owns a FIFO queue of chunks, its slowdown and its
// generator. Batches reach the workers only through PoolCore::submit().

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "ata/runtime/detail/task_body.hpp"
#include "ata/runtime/pool_options.hpp"
#include "ata/runtime/slowdown.hpp"
#include "ata/runtime/task_context.hpp"
#include "ata/sim/random.hpp"

namespace ata::runtime::detail {

class Chunk;
class Worker;

// One chunk's place in one worker's queue. The chunk owns it, so queuing allocates nothing and
// a submission cannot fail half-way.
struct QueueEntry {
  std::shared_ptr<Chunk> chunk;  // keeps the chunk alive while it is queued
  QueueEntry* next = nullptr;
};

// One batch's share of work for each of its workers: the pool runs it, or abandons it when
// shutting down first. A chunk object may be queued on several workers at once.
class Chunk {
 public:
  Chunk() = default;
  Chunk(const Chunk&) = delete;
  Chunk& operator=(const Chunk&) = delete;
  virtual ~Chunk() = default;

  // The entry this chunk takes in worker `worker`'s queue; queued at most once at a time.
  virtual QueueEntry& entry(std::size_t worker) noexcept = 0;
  // On `worker`'s thread.
  virtual void run(Worker& worker) noexcept = 0;
  // Worker `worker`'s copy will never run: the pool shut down first.
  virtual void abandon(std::size_t worker, const std::exception_ptr& reason) noexcept = 0;
  // The pool is shutting down while a worker runs this chunk: stop it.
  virtual void interrupt(const std::exception_ptr& reason) noexcept = 0;
};

class Worker {
 public:
  Worker(std::size_t index, Slowdown slowdown, std::uint64_t run_seed,
         std::chrono::nanoseconds idle_spin);

  [[nodiscard]] std::size_t index() const noexcept { return index_; }
  // Takes `tasks` finished or skipped tasks off this worker's backlog (see backlog_). On this
  // worker's thread: the worker outlives a pool that a task destroys.
  void settle_backlog(std::size_t tasks) noexcept {
    backlog_.fetch_sub(tasks, std::memory_order_relaxed);
  }

  // Runs ctx's task through `body`, slowed down as this worker is in round `round`. On this
  // worker's thread only: the generator and the pause state are unsynchronised.
  void run_slowed(TaskBody& body, const TaskContext& ctx, std::size_t round);

 private:
  friend class PoolCore;

  const std::size_t index_;
  const Slowdown slowdown_;
  const std::chrono::nanoseconds idle_spin_;
  sim::Rng rng_;  // stream (run seed, index): the simulator's stream for this worker
  // Sleep delays wait on this so that a stop request ends them early.
  std::mutex pause_mutex_;
  std::condition_variable_any pause_;

  std::mutex queue_mutex_;
  std::condition_variable queue_ready_;
  QueueEntry* head_ = nullptr;          // guarded by queue_mutex_, FIFO from head_ to tail_
  QueueEntry* tail_ = nullptr;          // guarded by queue_mutex_
  std::shared_ptr<Chunk> running_;      // guarded by queue_mutex_: the chunk being run
  std::atomic<std::size_t> queued_{0};  // entries queued, for polling without the lock
  // Tasks of allocated chunks queued or running here and not finished: load-aware allocation
  // reads it. Raised before a submission, lowered task by task as they end.
  std::atomic<std::size_t> backlog_{0};
  bool stopping_ = false;               // guarded by queue_mutex_
  std::thread thread_;
};

class PoolCore {
 public:
  explicit PoolCore(const PoolOptions& options);
  // shutdown(); on one of the pool's own workers (a task destroying its pool) it joins the
  // other workers and leaves the calling one to exit when its task returns.
  ~PoolCore();
  PoolCore(const PoolCore&) = delete;
  PoolCore& operator=(const PoolCore&) = delete;

  [[nodiscard]] std::size_t size() const noexcept { return workers_.size(); }
  [[nodiscard]] const PoolOptions& options() const noexcept { return options_; }
  [[nodiscard]] std::size_t queued() const;
  [[nodiscard]] bool is_shut_down() const noexcept { return shut_down_.load(); }
  // Per worker, the tasks of allocated chunks queued or running there and not yet finished
  // (out.size() == size()). Thread-safe; a snapshot.
  void backlog(std::span<double> out) const noexcept;
  // Adds (or, with settle_backlog(), removes) `tasks` to worker `worker`'s backlog.
  void add_backlog(std::size_t worker, std::size_t tasks) noexcept;
  void settle_backlog(std::size_t worker, std::size_t tasks) noexcept;
  // Whether the calling thread is one of this pool's workers.
  [[nodiscard]] bool is_own_thread() const noexcept;

  // Queues `chunk` on each worker of `targets`, all of them or none: queuing allocates
  // nothing. Submissions are ordered as a whole, so every worker queue sees batches in the
  // same order. Throws ShutdownError (queuing nothing) after shutdown() has started.
  void submit(const std::shared_ptr<Chunk>& chunk, std::span<const std::size_t> targets);
  // Stops the running chunks, abandons the queued ones and joins the threads; throws
  // ata::Error on one of the pool's own workers, which would wait for itself. Otherwise
  // allocates nothing and throws nothing.
  void shutdown();

 private:
  static void serve(const PoolCore* pool, Worker& worker);
  // Refuses new work, interrupts running chunks and abandons queued ones. Never throws.
  void stop_workers() noexcept;

  const PoolOptions options_;
  // Worker holds mutexes, so it is not movable; shared with its own thread, which may outlive
  // the pool when a task destroys it.
  std::vector<std::shared_ptr<Worker>> workers_;
  // Built up front, so that shutting down allocates nothing and cannot fail.
  const std::exception_ptr abandoned_error_;
  const std::exception_ptr interrupted_error_;
  std::mutex submit_mutex_;  // orders submissions against each other and against shutdown
  std::atomic<bool> shut_down_{false};  // set under submit_mutex_
  std::mutex join_mutex_;  // concurrent shutdown() callers wait here until threads are joined
};

}  // namespace ata::runtime::detail

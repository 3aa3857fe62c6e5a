#pragma once
// The worker threads behind WorkerPool: each owns a FIFO queue of chunks, its slowdown and its
// generator. Batches reach the workers only through PoolCore::submit().

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "ata/runtime/pool_options.hpp"
#include "ata/runtime/slowdown.hpp"
#include "ata/runtime/task_context.hpp"
#include "ata/runtime/detail/task_body.hpp"
#include "ata/sim/random.hpp"

namespace ata::runtime::detail {

class Worker;

// One batch's share of work for each of its workers: the pool runs it, or abandons it when
// shutting down first. A chunk object may be queued on several workers at once.
class Chunk {
 public:
  Chunk() = default;
  Chunk(const Chunk&) = delete;
  Chunk& operator=(const Chunk&) = delete;
  virtual ~Chunk() = default;

  // On `worker`'s thread.
  virtual void run(Worker& worker) noexcept = 0;
  // The share of worker `worker` will never run: the pool shut down first.
  virtual void abandon(std::size_t worker, const std::exception_ptr& reason) noexcept = 0;
};

class Worker {
 public:
  Worker(std::size_t index, Slowdown slowdown, std::uint64_t run_seed);

  [[nodiscard]] std::size_t index() const noexcept { return index_; }

  // Runs ctx's task through `body`, slowed down as this worker is in round `round`. On this
  // worker's thread only: the generator and the pause state are unsynchronised.
  void run_slowed(TaskBody& body, const TaskContext& ctx, std::size_t round);

 private:
  friend class PoolCore;

  const std::size_t index_;
  const Slowdown slowdown_;
  sim::Rng rng_;  // stream (run seed, index): the simulator's stream for this worker
  // Sleep delays wait on this so that a stop request ends them early.
  std::mutex pause_mutex_;
  std::condition_variable_any pause_;

  std::mutex queue_mutex_;
  std::condition_variable queue_ready_;
  std::deque<std::shared_ptr<Chunk>> queue_;  // guarded by queue_mutex_
  std::atomic<std::size_t> queued_{0};        // queue_.size(), for polling without the lock
  bool stopping_ = false;                     // guarded by queue_mutex_
  std::thread thread_;
};

class PoolCore {
 public:
  explicit PoolCore(const PoolOptions& options);
  ~PoolCore();
  PoolCore(const PoolCore&) = delete;
  PoolCore& operator=(const PoolCore&) = delete;

  [[nodiscard]] std::size_t size() const noexcept { return workers_.size(); }
  [[nodiscard]] const PoolOptions& options() const noexcept { return options_; }
  [[nodiscard]] std::size_t queued() const;
  [[nodiscard]] bool is_shut_down() const noexcept { return shut_down_.load(); }
  // Whether the calling thread is one of this pool's workers.
  [[nodiscard]] bool is_own_thread() const noexcept;

  // Queues `chunk` on each worker of `targets`. Submissions are ordered as a whole, so every
  // worker queue sees batches in the same order. Throws ShutdownError (queuing nothing) after
  // shutdown() has started.
  void submit(const std::shared_ptr<Chunk>& chunk, std::span<const std::size_t> targets);
  void shutdown();

 private:
  void serve(Worker& worker);

  const PoolOptions options_;
  std::vector<std::unique_ptr<Worker>> workers_;  // Worker holds mutexes: not movable
  std::mutex submit_mutex_;  // orders submissions against each other and against shutdown
  std::atomic<bool> shut_down_{false};  // set under submit_mutex_
  std::mutex join_mutex_;  // concurrent shutdown() callers wait here until threads are joined
};

}  // namespace ata::runtime::detail

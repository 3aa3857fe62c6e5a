#include "runtime/pool_core.hpp"

#include <string>
#include <utility>

#include "ata/core/error.hpp"
#include "ata/runtime/shutdown_error.hpp"
#include "runtime/spin.hpp"

#ifdef __linux__
#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#endif

namespace ata::runtime::detail {

namespace {

// The pool whose worker the current thread is, if any: lets run() and shutdown() refuse to
// wait for themselves.
thread_local const PoolCore* current_pool = nullptr;

#ifdef __linux__
void require_usable_cpu(unsigned cpu, std::size_t worker) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0 || cpu >= CPU_SETSIZE ||
      !CPU_ISSET(cpu, &allowed)) {
    throw InvalidArgument("worker " + std::to_string(worker) + " is pinned to CPU " +
                          std::to_string(cpu) + ", which this process may not use");
  }
}

void pin(std::thread& thread, unsigned cpu, std::size_t worker) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (pthread_setaffinity_np(thread.native_handle(), sizeof set, &set) != 0) {
    throw Error("cannot pin worker " + std::to_string(worker) + " to CPU " + std::to_string(cpu));
  }
}
#else
[[noreturn]] void require_usable_cpu(unsigned /*cpu*/, std::size_t worker) {
  throw InvalidArgument("worker " + std::to_string(worker) +
                        " is pinned to a CPU, but pinning needs Linux");
}
void pin(std::thread& /*thread*/, unsigned /*cpu*/, std::size_t /*worker*/) {}
#endif

// Sleep delays of a millisecond should not overshoot by the default 50 us timer slack.
void tighten_timer_slack() {
#ifdef __linux__
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
#endif
}

}  // namespace

Worker::Worker(std::size_t index, Slowdown slowdown, std::uint64_t run_seed,
               std::chrono::nanoseconds idle_spin)
    : index_(index), slowdown_(std::move(slowdown)), idle_spin_(idle_spin), rng_(run_seed, index) {}

void Worker::run_slowed(TaskBody& body, const TaskContext& ctx, std::size_t round) {
  using Clock = std::chrono::steady_clock;
  switch (slowdown_.kind()) {
    case Slowdown::Kind::none:
      body.execute(ctx);
      return;
    case Slowdown::Kind::repeat:
      body.execute(ctx);
      for (std::size_t run = 1; run < slowdown_.repetitions() && !ctx.stop_requested(); ++run) {
        body.execute(ctx);
      }
      return;
    case Slowdown::Kind::sleep: {
      // Drawn first, so every task started consumes exactly one draw, whatever it does.
      const auto delay = slowdown_.draw(round, rng_);
      body.execute(ctx);
      std::unique_lock lock(pause_mutex_);
      pause_.wait_for(lock, ctx.stop_token(), delay, [] { return false; });
      return;
    }
    case Slowdown::Kind::burn: {
      const auto delay = slowdown_.draw(round, rng_);
      body.execute(ctx);
      const auto deadline = Clock::now() + delay;
      while (Clock::now() < deadline && !ctx.stop_requested()) {
      }
      return;
    }
  }
}

PoolCore::PoolCore(const PoolOptions& options)
    : options_(options),
      abandoned_error_(std::make_exception_ptr(
          ShutdownError("worker pool is shut down: a worker never ran its share of this batch"))),
      interrupted_error_(std::make_exception_ptr(
          ShutdownError("worker pool is shut down: this batch was stopped while it ran"))) {
  for (std::size_t i = 0; i < options_.workers(); ++i) {
    if (const auto cpu = options_.cpu(i)) require_usable_cpu(*cpu, i);
  }
  workers_.reserve(options_.workers());
  for (std::size_t i = 0; i < options_.workers(); ++i) {
    workers_.push_back(
        std::make_shared<Worker>(i, options_.slowdown(i), options_.seed(), options_.idle_spin()));
  }
  try {
    for (auto& worker : workers_) {
      // The thread shares its worker, which thus outlives the pool if a task destroys it.
      worker->thread_ = std::thread([this, worker] { serve(this, *worker); });
      if (const auto cpu = options_.cpu(worker->index_)) pin(worker->thread_, *cpu, worker->index_);
    }
  } catch (...) {
    shutdown();
    throw;
  }
}

PoolCore::~PoolCore() {
  if (!is_own_thread()) {
    shutdown();
    return;
  }
  // A task is destroying its own pool: its thread cannot join itself. It finishes its task
  // (stopped), finds its queue closed and exits; its Worker lives on in the thread's lambda.
  std::lock_guard joining(join_mutex_);
  stop_workers();
  for (auto& worker : workers_) {
    if (!worker->thread_.joinable()) continue;
    if (worker->thread_.get_id() == std::this_thread::get_id()) {
      worker->thread_.detach();
    } else {
      worker->thread_.join();
    }
  }
  current_pool = nullptr;
}

void PoolCore::serve(const PoolCore* pool, Worker& worker) {
  current_pool = pool;
  if (worker.slowdown_.kind() == Slowdown::Kind::sleep) tighten_timer_slack();
  const auto has_work = [&] { return worker.queued_.load(std::memory_order_acquire) > 0; };
  for (;;) {
    spin_until(has_work, worker.idle_spin_);
    Chunk* chunk = nullptr;
    {
      std::unique_lock lock(worker.queue_mutex_);
      worker.queue_ready_.wait(lock, [&] { return worker.head_ != nullptr || worker.stopping_; });
      // shutdown() has taken the queued chunks away to abandon them.
      if (worker.stopping_) return;
      QueueEntry* entry = std::exchange(worker.head_, worker.head_->next);
      if (worker.head_ == nullptr) worker.tail_ = nullptr;
      entry->next = nullptr;
      worker.running_ = std::move(entry->chunk);
      worker.queued_.fetch_sub(1, std::memory_order_relaxed);
      chunk = worker.running_.get();
    }
    chunk->run(worker);
    std::shared_ptr<Chunk> finished;
    {
      std::lock_guard lock(worker.queue_mutex_);
      finished = std::move(worker.running_);
    }
    // `finished` may be the chunk's last reference: it dies here, outside the lock.
  }
}

void PoolCore::backlog(std::span<double> out) const noexcept {
  for (std::size_t i = 0; i < out.size() && i < workers_.size(); ++i) {
    out[i] = static_cast<double>(workers_[i]->backlog_.load(std::memory_order_relaxed));
  }
}

void PoolCore::add_backlog(std::size_t worker, std::size_t tasks) noexcept {
  workers_[worker]->backlog_.fetch_add(tasks, std::memory_order_relaxed);
}

void PoolCore::settle_backlog(std::size_t worker, std::size_t tasks) noexcept {
  workers_[worker]->backlog_.fetch_sub(tasks, std::memory_order_relaxed);
}

std::size_t PoolCore::queued() const {
  std::size_t total = 0;
  for (const auto& worker : workers_) {
    total += worker->queued_.load(std::memory_order_relaxed);
  }
  return total;
}

bool PoolCore::is_own_thread() const noexcept { return current_pool == this; }

void PoolCore::submit(const std::shared_ptr<Chunk>& chunk, std::span<const std::size_t> targets) {
  std::lock_guard order(submit_mutex_);
  if (shut_down_) {
    throw ShutdownError("worker pool is shut down: cannot run a batch on it");
  }
  // Nothing below allocates or throws: every worker gets the chunk, or (above) none does.
  for (std::size_t target : targets) {
    Worker& worker = *workers_[target];
    QueueEntry& entry = chunk->entry(target);
    entry.chunk = chunk;
    {
      std::lock_guard lock(worker.queue_mutex_);
      if (worker.tail_ == nullptr) {
        worker.head_ = &entry;
      } else {
        worker.tail_->next = &entry;
      }
      worker.tail_ = &entry;
      worker.queued_.fetch_add(1, std::memory_order_release);
    }
    worker.queue_ready_.notify_one();
  }
}

void PoolCore::shutdown() {
  if (is_own_thread()) {
    throw Error(
        "WorkerPool::shutdown() called from one of the pool's own workers would wait "
        "for itself; shut the pool down from another thread");
  }
  std::lock_guard joining(join_mutex_);
  stop_workers();
  for (auto& worker : workers_) {
    if (worker->thread_.joinable()) worker->thread_.join();
  }
}

void PoolCore::stop_workers() noexcept {
  {
    std::lock_guard order(submit_mutex_);
    shut_down_ = true;
  }
  for (auto& worker : workers_) {
    QueueEntry* queued = nullptr;
    std::shared_ptr<Chunk> running;
    {
      std::lock_guard lock(worker->queue_mutex_);
      worker->stopping_ = true;
      queued = std::exchange(worker->head_, nullptr);
      worker->tail_ = nullptr;
      worker->queued_.store(0, std::memory_order_relaxed);
      running = worker->running_;
    }
    worker->queue_ready_.notify_one();
    // Outside the queue lock: stopping and abandoning may complete a batch, waking its waiter.
    if (running) running->interrupt(interrupted_error_);
    while (queued != nullptr) {
      QueueEntry* entry = std::exchange(queued, queued->next);
      entry->next = nullptr;
      // The entry lives in the chunk, which may die with this reference: nothing touches the
      // entry after the move.
      const std::shared_ptr<Chunk> chunk = std::move(entry->chunk);
      chunk->abandon(worker->index_, abandoned_error_);
    }
  }
}

}  // namespace ata::runtime::detail

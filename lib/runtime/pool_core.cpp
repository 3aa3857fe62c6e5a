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

Worker::Worker(std::size_t index, Slowdown slowdown, std::uint64_t run_seed)
    : index_(index), slowdown_(std::move(slowdown)), rng_(run_seed, index) {}

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

PoolCore::PoolCore(const PoolOptions& options) : options_(options) {
  for (std::size_t i = 0; i < options_.workers(); ++i) {
    if (const auto cpu = options_.cpu(i)) require_usable_cpu(*cpu, i);
  }
  workers_.reserve(options_.workers());
  for (std::size_t i = 0; i < options_.workers(); ++i) {
    workers_.push_back(std::make_unique<Worker>(i, options_.slowdown(i), options_.seed()));
  }
  try {
    for (auto& worker : workers_) {
      worker->thread_ = std::thread([this, w = worker.get()] { serve(*w); });
      if (const auto cpu = options_.cpu(worker->index_)) pin(worker->thread_, *cpu, worker->index_);
    }
  } catch (...) {
    shutdown();
    throw;
  }
}

PoolCore::~PoolCore() { shutdown(); }

void PoolCore::serve(Worker& worker) {
  current_pool = this;
  if (worker.slowdown_.kind() == Slowdown::Kind::sleep) tighten_timer_slack();
  const auto has_work = [&] { return worker.queued_.load(std::memory_order_acquire) > 0; };
  for (;;) {
    spin_until(has_work, options_.idle_spin());
    std::shared_ptr<Chunk> chunk;
    {
      std::unique_lock lock(worker.queue_mutex_);
      worker.queue_ready_.wait(lock, [&] { return !worker.queue_.empty() || worker.stopping_; });
      // shutdown() has taken the queued chunks away to abandon them.
      if (worker.stopping_) return;
      chunk = std::move(worker.queue_.front());
      worker.queue_.pop_front();
      worker.queued_.fetch_sub(1, std::memory_order_relaxed);
    }
    chunk->run(worker);
  }
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
  for (std::size_t target : targets) {
    Worker& worker = *workers_[target];
    {
      std::lock_guard lock(worker.queue_mutex_);
      worker.queue_.push_back(chunk);
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
  {
    std::lock_guard order(submit_mutex_);
    shut_down_ = true;
  }
  // Chunks taken off the queues, by worker; abandoned outside the queue locks because
  // abandoning wakes the batches' waiters.
  std::vector<std::pair<std::size_t, std::shared_ptr<Chunk>>> dropped;
  for (auto& worker : workers_) {
    {
      std::lock_guard lock(worker->queue_mutex_);
      worker->stopping_ = true;
      for (auto& chunk : worker->queue_) dropped.emplace_back(worker->index_, std::move(chunk));
      worker->queue_.clear();
      worker->queued_.store(0, std::memory_order_relaxed);
    }
    worker->queue_ready_.notify_one();
  }
  for (const auto& [worker, chunk] : dropped) {
    chunk->abandon(worker, std::make_exception_ptr(ShutdownError(
                               "worker pool is shut down: worker " + std::to_string(worker) +
                               " never ran its share of this batch")));
  }
  for (auto& worker : workers_) {
    if (worker->thread_.joinable()) worker->thread_.join();
  }
}

}  // namespace ata::runtime::detail

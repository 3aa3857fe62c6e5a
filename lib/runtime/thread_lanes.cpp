#include "runtime/thread_lanes.hpp"

#include <string>
#include <utility>

#include "ata/core/error.hpp"
#include "ata/runtime/shutdown_error.hpp"
#include "runtime/spin.hpp"

#ifdef __linux__
#include <pthread.h>
#include <sched.h>
#endif

namespace ata::runtime::detail {

namespace {

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

}  // namespace

ThreadLanes::ThreadLanes(const PoolOptions& options, bool caller_lane)
    : LaneSet(options, "worker pool", caller_lane) {
  for (std::size_t i = 0; i < options_.workers(); ++i) {
    if (const auto cpu = options_.cpu(i)) require_usable_cpu(*cpu, i);
  }
  const std::size_t threads = options_.workers() - (caller_lane ? 1 : 0);
  lanes_.reserve(options_.workers());
  threads_.reserve(threads);
  for (std::size_t i = 0; i < options_.workers(); ++i) {
    lanes_.push_back(std::make_shared<Lane>(i, options_.slowdown(i), options_.seed()));
  }
  try {
    for (std::size_t i = 0; i < threads; ++i) {
      const std::shared_ptr<Lane>& lane = lanes_[i];
      // The thread shares its lane, which thus outlives the pool if a task destroys it.
      threads_.emplace_back(
          [this, lane, spin = options_.idle_spin()] { serve(this, *lane, spin); });
      if (const auto cpu = options_.cpu(lane->index())) {
        pin(threads_.back(), *cpu, lane->index());
      }
    }
  } catch (...) {
    shutdown();
    throw;
  }
}

ThreadLanes::~ThreadLanes() {
  if (!is_own_thread()) {
    shutdown();
    return;
  }
  // A task is destroying its own pool: its thread cannot join itself. It finishes its task
  // (stopped), finds its queue closed and exits; its Lane lives on in the thread's lambda.
  std::lock_guard joining(join_mutex_);
  stop_lanes();
  for (auto& thread : threads_) {
    if (!thread.joinable()) continue;
    if (thread.get_id() == std::this_thread::get_id()) {
      thread.detach();
    } else {
      thread.join();
    }
  }
  OwnThreadMark::forget(this);
}

void ThreadLanes::serve(const LaneSet* set, Lane& lane, std::chrono::nanoseconds idle_spin) {
  // For the thread's whole life, including after a task destroyed the pool.
  const OwnThreadMark mark(set, &lane);
  const TightTimerSlack slack(lane);
  const auto has_work = [&] { return lane.queued_.load(std::memory_order_acquire) > 0; };
  for (;;) {
    spin_until(has_work, idle_spin);
    Chunk* chunk = nullptr;
    {
      std::unique_lock lock(lane.queue_mutex_);
      lane.queue_changed_.wait(lock, [&] { return lane.head_ != nullptr || lane.stopping_; });
      // shutdown() has taken the queued chunks away to abandon them.
      chunk = take_next(lane);
      if (chunk == nullptr) return;
    }
    run_chunk(lane, *chunk);
  }
}

void ThreadLanes::wake(Lane& lane) noexcept { lane.queue_changed_.notify_one(); }

void ThreadLanes::shutdown() {
  if (is_own_thread()) {
    throw Error(
        "WorkerPool::shutdown() called from one of the pool's own workers would wait "
        "for itself; shut the pool down from another thread");
  }
  std::lock_guard joining(join_mutex_);
  stop_lanes();
  for (auto& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
}

}  // namespace ata::runtime::detail

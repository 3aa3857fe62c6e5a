#pragma once
/// @file
/// Lanes on oneTBB arenas: one lane per part of the machine. Header only; needs oneTBB, which
/// the rest of the library does not.

#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/info.h>
#include <oneapi/tbb/task_arena.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ata/core/error.hpp"
#include "ata/runtime/posted_lanes.hpp"

namespace ata::runtime {

namespace detail {

// Enough TBB worker threads for every lane of the live ArenaLanes to run at once. TBB obeys the
// smallest max_allowed_parallelism of the global_control objects alive, so lane sets raising
// the limit each with a control of their own would all be held to the first one's: the live
// sets share one control, sized for all their arenas together (plus the application thread
// TBB counts in its limit), and only ever above TBB's limit without it.
class ArenaThreadLimit {
 public:
  explicit ArenaThreadLimit(std::size_t threads) : threads_(threads) {
    Shared& shared = shared_state();
    std::lock_guard lock(shared.mutex);
    shared.threads += threads_;
    try {
      shared.apply();
    } catch (...) {
      shared.threads -= threads_;
      shared.apply_or_drop();
      throw;
    }
  }
  ~ArenaThreadLimit() {
    Shared& shared = shared_state();
    std::lock_guard lock(shared.mutex);
    shared.threads -= threads_;
    shared.apply_or_drop();
  }
  ArenaThreadLimit(const ArenaThreadLimit&) = delete;
  ArenaThreadLimit& operator=(const ArenaThreadLimit&) = delete;

 private:
  struct Shared {
    std::mutex mutex;
    std::size_t threads = 0;  // the live lane sets' threads, guarded by mutex
    std::unique_ptr<oneapi::tbb::global_control> control;  // guarded by mutex

    // Replaces the control by one for `threads`, if TBB's limit without it is lower.
    void apply() {
      using oneapi::tbb::global_control;
      control.reset();
      if (threads == 0) return;
      const std::size_t wanted = threads + 1;
      if (wanted <= global_control::active_value(global_control::max_allowed_parallelism)) return;
      control = std::make_unique<global_control>(global_control::max_allowed_parallelism, wanted);
    }
    // As apply(); without memory, leaves TBB its own limit (the lanes then share fewer threads).
    void apply_or_drop() noexcept {
      try {
        apply();
      } catch (...) {
        control.reset();
      }
    }
  };
  static Shared& shared_state() {
    static Shared shared;
    return shared;
  }

  const std::size_t threads_;
};

// The arenas ArenaLanes made and its share of TBB's threads. A base class declared before
// PostedLanes, so that the lanes shut down before the arenas and the threads go.
struct ArenaLanesResources {
  std::vector<std::unique_ptr<oneapi::tbb::task_arena>> owned;
  std::unique_ptr<ArenaThreadLimit> threads;
};
}  // namespace detail

/// One lane per oneTBB arena, each one part of the machine (a NUMA node, a core type, a
/// number of threads).
///
/// @code
/// // Lane 0 may use 2 threads, lane 1 one: tasks that use TBB inside run twice as wide on 0.
/// std::vector<tbb::task_arena::constraints> parts(2);
/// parts[0].set_max_concurrency(2);
/// parts[1].set_max_concurrency(1);
/// ata::runtime::ArenaLanes lanes(parts);
/// ata::AtaAutoPolicy policy(lanes.size());
/// ata::runtime::BatchScheduler scheduler(lanes, policy);
/// @endcode
///
/// Lane i enqueues its chunks into arena i (task_arena::enqueue), one at a time; a chunk runs
/// its tasks in a row on one of the arena's threads, and whatever TBB parallelism a task uses
/// inside (parallel_for, task_group...) runs in the same arena, on its share of the machine.
/// Arenas made from constraints reserve no slot for application threads, and the lanes raise
/// TBB's thread limit (one tbb::global_control shared by the ArenaLanes alive, sized for all
/// their arenas) so that every lane has a worker thread: on a 2-core machine TBB would
/// otherwise start one. A lower max_allowed_parallelism of your own still wins (TBB obeys
/// the smallest): lanes then wait for threads, as tasks of a busy arena do. Arenas you supply must
/// outlive the lanes and should reserve no slot for masters (task_arena(concurrency, 0)): enqueued
/// work runs on TBB's worker threads only. See PostedLanes for ordering and shutdown.
///
/// Thread-safety: as Lanes. Debian's oneTBB is not built for ThreadSanitizer: the lanes'
/// own synchronisation is the posted lanes' (tested under TSan with other launchers).
class ArenaLanes final : private detail::ArenaLanesResources, public PostedLanes {
 public:
  /// One lane per arena made from `parts`, without slowdown. Throws ata::InvalidArgument for
  /// no parts.
  explicit ArenaLanes(const std::vector<oneapi::tbb::task_arena::constraints>& parts)
      : ArenaLanes(parts, PoolOptions(parts.empty() ? 1 : parts.size())) {}
  /// One lane per arena made from `parts`, with the slowdowns and seed of `options` (worker
  /// count equal to the number of parts, no CPU pinning).
  ArenaLanes(const std::vector<oneapi::tbb::task_arena::constraints>& parts,
             const PoolOptions& options)
      : ArenaLanes(made(parts), options) {}
  /// One lane per arena you supply (they must outlive the lanes), without slowdown.
  explicit ArenaLanes(const std::vector<oneapi::tbb::task_arena*>& arenas)
      : ArenaLanes(arenas, PoolOptions(arenas.empty() ? 1 : arenas.size())) {}
  /// One lane per arena you supply, with the slowdowns and seed of `options`.
  ArenaLanes(const std::vector<oneapi::tbb::task_arena*>& arenas, const PoolOptions& options)
      : ArenaLanes(detail::ArenaLanesResources{}, arenas, options) {}
  /// Shuts down, and waits until the arenas ran the lanes' work still in them (it only finds
  /// the lanes stopped), so that the arenas may go next and nothing of the lanes is left in
  /// TBB's queues. Inside one of the lanes' tasks, waits for the other lanes only.
  ~ArenaLanes() override { shut_down_and_drain(); }
  ArenaLanes(const ArenaLanes&) = delete;
  ArenaLanes& operator=(const ArenaLanes&) = delete;

 private:
  ArenaLanes(detail::ArenaLanesResources&& resources, const PoolOptions& options)
      : ArenaLanes(std::move(resources), pointers(resources), options) {}
  ArenaLanes(detail::ArenaLanesResources&& resources,
             const std::vector<oneapi::tbb::task_arena*>& arenas, const PoolOptions& options)
      : detail::ArenaLanesResources{std::move(resources.owned), threads_for(arenas)},
        PostedLanes(launchers(arenas), options, "oneTBB arena lane set") {}

  static detail::ArenaLanesResources made(
      const std::vector<oneapi::tbb::task_arena::constraints>& parts) {
    if (parts.empty()) throw InvalidArgument("oneTBB arena lane set needs at least one part");
    detail::ArenaLanesResources out;
    out.owned.reserve(parts.size());
    for (const auto& part : parts) {
      out.owned.push_back(std::make_unique<oneapi::tbb::task_arena>(part, 0));
    }
    return out;
  }
  static std::vector<oneapi::tbb::task_arena*> pointers(const detail::ArenaLanesResources& r) {
    std::vector<oneapi::tbb::task_arena*> out;
    for (const auto& arena : r.owned) out.push_back(arena.get());
    return out;
  }
  // Every lane may run a chunk at once, each on a TBB worker thread, plus the threads tasks
  // use inside their arenas. Raised before the lanes post anything to the arenas.
  static std::unique_ptr<detail::ArenaThreadLimit> threads_for(
      const std::vector<oneapi::tbb::task_arena*>& arenas) {
    std::size_t wanted = 0;
    for (auto* arena : arenas) {
      if (arena == nullptr) continue;
      wanted += static_cast<std::size_t>(std::max(arena->max_concurrency(), 1));
    }
    return std::make_unique<detail::ArenaThreadLimit>(wanted);
  }
  static std::vector<Launcher> launchers(const std::vector<oneapi::tbb::task_arena*>& arenas) {
    if (arenas.empty()) throw InvalidArgument("oneTBB arena lane set needs at least one arena");
    std::vector<Launcher> out;
    out.reserve(arenas.size());
    for (std::size_t i = 0; i < arenas.size(); ++i) {
      if (arenas[i] == nullptr) {
        throw InvalidArgument("oneTBB arena lane set: arena " + std::to_string(i) + " is null");
      }
      out.emplace_back(
          [arena = arenas[i]](std::function<void()> work) { arena->enqueue(std::move(work)); });
    }
    return out;
  }
};

}  // namespace ata::runtime

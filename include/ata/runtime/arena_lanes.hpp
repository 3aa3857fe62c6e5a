#pragma once
/// @file
/// Lanes on oneTBB arenas: one lane per part of the machine. Header only; needs oneTBB, which
/// the rest of the library does not.

#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/info.h>
#include <oneapi/tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
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

// A lane's own thread, which enters the lane's arena (task_arena::execute) to run the runs the
// lane posts. Enqueued into the arena instead, a run waits for TBB to send a worker, and
// oneTBB 2021.8 sometimes sent none: an arena of concurrency 2 whose spare worker found nothing
// to do withdrew its demand while its first worker was still busy in a long task, TBB then
// counted too few workers to wake a sleeping one for the next arena, and that lane's task
// started only once another lane's ended (1 process in 15 of a test with 5 lanes of
// concurrency 2 and 1). Like WorkerPool's threads, it polls `idle_spin` for the next run
// before it leaves the arena and sleeps: waking a thread costs more than a small batch.
class ArenaEntry {
 public:
  // Starts the thread. `arena` stays alive as long as the thread needs it.
  ArenaEntry(std::shared_ptr<oneapi::tbb::task_arena> arena, std::size_t lane,
             std::chrono::nanoseconds idle_spin)
      : state_(std::make_shared<State>()) {
    try {
      thread_ = std::thread([state = state_, arena = std::move(arena), idle_spin] {
        serve(*state, *arena, idle_spin);
      });
    } catch (const std::system_error&) {
      throw Error("oneTBB arena lane set: could not start the thread of lane " +
                  std::to_string(lane) + " (the system refused a new thread)");
    }
  }
  // Runs what was posted, then stops the thread. Inside the thread's own run (a task
  // destroying its lanes), leaves it to end when that run returns.
  ~ArenaEntry() {
    {
      std::lock_guard lock(state_->mutex);
      state_->stopping = true;
    }
    state_->changed.notify_one();
    if (thread_.get_id() == std::this_thread::get_id()) {
      thread_.detach();
    } else {
      thread_.join();
    }
  }
  ArenaEntry(const ArenaEntry&) = delete;
  ArenaEntry& operator=(const ArenaEntry&) = delete;

  // Thread-safe. Throws std::bad_alloc (the lane then fails its queued batches).
  void post(std::function<void()> work) {
    {
      std::lock_guard lock(state_->mutex);
      state_->posted.push_back(std::move(work));
      state_->pending.store(state_->posted.size(), std::memory_order_release);
    }
    state_->changed.notify_one();
  }

 private:
  struct State {
    std::mutex mutex;
    std::condition_variable changed;
    std::deque<std::function<void()>> posted;  // guarded by mutex
    std::atomic<std::size_t> pending{0};       // posted.size(), for polling without the lock
    bool stopping = false;                     // guarded by mutex
  };

  static void serve(State& state, oneapi::tbb::task_arena& arena,
                    std::chrono::nanoseconds idle_spin) {
    for (;;) {
      {
        std::unique_lock lock(state.mutex);
        state.changed.wait(lock, [&] { return state.stopping || !state.posted.empty(); });
        if (state.posted.empty()) return;
      }
      arena.execute([&] { run_while_busy(state, idle_spin); });
    }
  }

  // Inside the arena: runs what is posted until nothing came for `idle_spin`.
  static void run_while_busy(State& state, std::chrono::nanoseconds idle_spin) {
    for (;;) {
      std::function<void()> work;
      {
        std::lock_guard lock(state.mutex);
        if (!state.posted.empty()) {
          work = std::move(state.posted.front());
          state.posted.pop_front();
          state.pending.store(state.posted.size(), std::memory_order_relaxed);
        } else if (state.stopping) {
          return;
        }
      }
      if (work) {
        work();  // a posted run does not throw; it is outstanding until its copy is gone
        work = nullptr;
        continue;
      }
      const auto deadline = std::chrono::steady_clock::now() + idle_spin;
      while (state.pending.load(std::memory_order_acquire) == 0) {
        if (std::chrono::steady_clock::now() >= deadline) return;
        std::this_thread::yield();
      }
    }
  }

  std::shared_ptr<State> state_;
  std::thread thread_;
};

// The arenas ArenaLanes made, its share of TBB's threads and its lanes' threads. A base class
// declared before PostedLanes, so that the lanes shut down before their threads stop, the
// arenas go and the thread limit falls.
struct ArenaLanesResources {
  std::vector<std::shared_ptr<oneapi::tbb::task_arena>> owned;
  std::unique_ptr<ArenaThreadLimit> threads;
  std::vector<std::unique_ptr<ArenaEntry>> entries;  // entries[i] runs lane i
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
/// Lane i has a thread of its own that enters arena i (task_arena::execute) to run the lane's
/// chunks, one at a time; a chunk runs its tasks in a row there, and whatever TBB parallelism
/// a task uses inside (parallel_for, task_group...) runs in the same arena, on its share of the
/// machine, with TBB's worker threads joining it. The lane never waits for TBB to send a worker
/// (oneTBB 2021.8 could starve an arena so, see detail::ArenaEntry). Arenas made from
/// constraints reserve their one slot for application threads for the lane's thread. The lanes
/// raise TBB's thread limit (one tbb::global_control shared by the ArenaLanes alive, sized for
/// all their arenas) so that every arena can run at its full concurrency: on a 2-core machine
/// TBB would otherwise start one worker. A lower max_allowed_parallelism of your own still wins
/// (TBB obeys the smallest): tasks then get fewer helpers. Arenas you supply must outlive the
/// lanes; with a slot reserved for application threads (task_arena(concurrency, 1)) the lane's
/// thread enters at once, without one it takes a free slot, or waits for one while TBB's workers
/// hold them all. See PostedLanes for ordering and shutdown.
///
/// Thread-safety: as Lanes. Debian's oneTBB is not built for ThreadSanitizer: the lanes'
/// own synchronisation is the posted lanes' (tested under TSan with other launchers) and a
/// queue per lane thread.
class ArenaLanes final : private detail::ArenaLanesResources, public PostedLanes {
 public:
  /// One lane per arena made from `parts`, without slowdown. Throws ata::InvalidArgument for
  /// no parts.
  explicit ArenaLanes(const std::vector<oneapi::tbb::task_arena::constraints>& parts)
      : ArenaLanes(parts, LaneOptions(parts.empty() ? 1 : parts.size())) {}
  /// One lane per arena made from `parts`, with the slowdowns and seed of `options` (worker
  /// count equal to the number of parts).
  ArenaLanes(const std::vector<oneapi::tbb::task_arena::constraints>& parts,
             const LaneOptions& options)
      : ArenaLanes(made(parts), options) {}
  /// One lane per arena you supply (they must outlive the lanes), without slowdown.
  explicit ArenaLanes(const std::vector<oneapi::tbb::task_arena*>& arenas)
      : ArenaLanes(arenas, LaneOptions(arenas.empty() ? 1 : arenas.size())) {}
  /// One lane per arena you supply, with the slowdowns and seed of `options`.
  ArenaLanes(const std::vector<oneapi::tbb::task_arena*>& arenas, const LaneOptions& options)
      : ArenaLanes(detail::ArenaLanesResources{}, borrowed(arenas), options) {}
  /// Shuts down, and waits until the lanes' threads ran the lanes' runs still posted to them
  /// (they only find the lanes stopped), so that the arenas may go next. Inside one of the
  /// lanes' tasks, waits for the other lanes only.
  ~ArenaLanes() override { shut_down_and_drain(); }
  ArenaLanes(const ArenaLanes&) = delete;
  ArenaLanes& operator=(const ArenaLanes&) = delete;

 private:
  using Arena = oneapi::tbb::task_arena;
  using SharedArenas = std::vector<std::shared_ptr<Arena>>;

  ArenaLanes(detail::ArenaLanesResources&& resources, const LaneOptions& options)
      : ArenaLanes(std::move(resources), resources.owned, options) {}
  // `arenas` by value: it may be a copy of the `owned` that the first member takes.
  ArenaLanes(detail::ArenaLanesResources&& resources, SharedArenas arenas,
             const LaneOptions& options)
      : detail::ArenaLanesResources{std::move(resources.owned), threads_for(arenas),
                                    entries_for(arenas, options.idle_spin())},
        PostedLanes(launchers(entries), options, "oneTBB arena lane set") {}

  // One slot reserved for application threads: the lane's thread enters at once.
  static detail::ArenaLanesResources made(const std::vector<Arena::constraints>& parts) {
    if (parts.empty()) throw InvalidArgument("oneTBB arena lane set needs at least one part");
    detail::ArenaLanesResources out;
    out.owned.reserve(parts.size());
    for (const auto& part : parts) out.owned.push_back(std::make_shared<Arena>(part, 1));
    return out;
  }
  // The user's arenas, not owned.
  static SharedArenas borrowed(const std::vector<Arena*>& arenas) {
    if (arenas.empty()) throw InvalidArgument("oneTBB arena lane set needs at least one arena");
    SharedArenas out;
    out.reserve(arenas.size());
    for (std::size_t i = 0; i < arenas.size(); ++i) {
      if (arenas[i] == nullptr) {
        throw InvalidArgument("oneTBB arena lane set: arena " + std::to_string(i) + " is null");
      }
      out.push_back(std::shared_ptr<Arena>(arenas[i], [](Arena*) {}));
    }
    return out;
  }
  // Every arena may run at its full concurrency on TBB's workers (they join the lanes' threads
  // in the tasks' own parallelism, and run a lane whose thread found no free slot). Raised
  // before the lanes post anything.
  static std::unique_ptr<detail::ArenaThreadLimit> threads_for(const SharedArenas& arenas) {
    std::size_t wanted = 0;
    for (const auto& arena : arenas) {
      wanted += static_cast<std::size_t>(std::max(arena->max_concurrency(), 1));
    }
    return std::make_unique<detail::ArenaThreadLimit>(wanted);
  }
  static std::vector<std::unique_ptr<detail::ArenaEntry>> entries_for(
      const SharedArenas& arenas, std::chrono::nanoseconds idle_spin) {
    std::vector<std::unique_ptr<detail::ArenaEntry>> out;
    out.reserve(arenas.size());
    for (std::size_t i = 0; i < arenas.size(); ++i) {
      out.push_back(std::make_unique<detail::ArenaEntry>(arenas[i], i, idle_spin));
    }
    return out;
  }
  static std::vector<Launcher> launchers(
      const std::vector<std::unique_ptr<detail::ArenaEntry>>& entries) {
    std::vector<Launcher> out;
    out.reserve(entries.size());
    for (const auto& entry : entries) {
      out.emplace_back([entry = entry.get()](std::function<void()> work) {
        entry->post(std::move(work));
      });
    }
    return out;
  }
};

}  // namespace ata::runtime

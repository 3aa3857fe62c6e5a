#pragma once
// What the [lanes] tests run on: a kind of lanes is a type with a name, the executor its lanes
// post to (owned by the kind, so that it outlives the lanes a test makes), and
//   std::unique_ptr<ata::runtime::Lanes> make(const ata::runtime::LaneOptions& options);
// for at most kMaxLanes lanes. lane_scenarios.hpp runs the same scenarios on every kind.

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "ata/ata.hpp"
#include "ata/runtime/posted_lanes.hpp"

namespace ata::testing {

// Every executor of a kind has a thread for each of this many lanes at once, so that the
// scenarios may block every lane with a task.
inline constexpr std::size_t kMaxLanes = 4;

// The smallest executor a launcher can post to: a FIFO of work run by plain std::threads, all
// of it visible to ThreadSanitizer. Work still queued when it is destroyed is dropped unrun.
class ThreadQueue {
 public:
  explicit ThreadQueue(std::size_t threads) {
    for (std::size_t t = 0; t < threads; ++t) threads_.emplace_back([this] { serve(); });
  }
  ~ThreadQueue() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
    for (auto& thread : threads_) thread.join();
  }
  ThreadQueue(const ThreadQueue&) = delete;
  ThreadQueue& operator=(const ThreadQueue&) = delete;

  void push(std::function<void()> work) {
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(std::move(work));
    }
    changed_.notify_one();
  }
  [[nodiscard]] ata::runtime::PostedLanes::Launcher launcher() {
    return [this](std::function<void()> work) { push(std::move(work)); };
  }

 private:
  void serve() {
    for (;;) {
      std::function<void()> work;
      {
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (stopping_) return;
        work = std::move(queue_.front());
        queue_.pop_front();
      }
      work();
    }
  }

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::function<void()>> queue_;  // guarded by mutex_
  bool stopping_ = false;                    // guarded by mutex_
  std::vector<std::thread> threads_;
};

// Work posted to it waits until the test runs (or drops) it: a posted run at a chosen moment.
class HeldWork {
 public:
  [[nodiscard]] ata::runtime::PostedLanes::Launcher launcher() {
    return [this](std::function<void()> work) {
      std::lock_guard lock(mutex_);
      held_.push_back(std::move(work));
    };
  }
  [[nodiscard]] std::size_t size() {
    std::lock_guard lock(mutex_);
    return held_.size();
  }
  // Runs the work held now (which may post more, held for the next call).
  void run_all() {
    for (auto& work : take()) work();
  }
  // Destroys the work held now, unrun.
  void drop_all() { (void)take(); }

 private:
  std::vector<std::function<void()>> take() {
    std::lock_guard lock(mutex_);
    return std::exchange(held_, {});
  }

  std::mutex mutex_;
  std::vector<std::function<void()>> held_;
};

// WorkerPool: a thread of its own per lane.
struct OwnThreads {
  static constexpr std::string_view name = "WorkerPool";
  std::unique_ptr<ata::runtime::Lanes> make(const ata::runtime::LaneOptions& options) {
    return std::make_unique<ata::runtime::WorkerPool>(ata::runtime::PoolOptions(options));
  }
};

// A CallerLanePool: threads for all workers but the last, the caller lane, whose part the
// batch's caller runs. The options' seed and polling apply (they carry no slowdown here).
struct OwnThreadsAndCaller {
  static constexpr std::string_view name = "CallerLanePool";
  std::unique_ptr<ata::runtime::Lanes> make(const ata::runtime::LaneOptions& options) {
    return std::make_unique<ata::runtime::CallerLanePool>(
        ata::runtime::PoolOptions(options.workers() - 1)
            .set_seed(options.seed())
            .set_idle_spin(options.idle_spin()));
  }
};

// PostedLanes whose lanes all post to one ThreadQueue of kMaxLanes threads.
struct PostedOnThreadQueue {
  static constexpr std::string_view name = "PostedLanes on a ThreadQueue";
  ThreadQueue queue{kMaxLanes};
  std::unique_ptr<ata::runtime::Lanes> make(const ata::runtime::LaneOptions& options) {
    std::vector<ata::runtime::PostedLanes::Launcher> launchers;
    for (std::size_t i = 0; i < options.workers(); ++i) launchers.push_back(queue.launcher());
    return std::make_unique<ata::runtime::PostedLanes>(std::move(launchers), options);
  }
};

}  // namespace ata::testing

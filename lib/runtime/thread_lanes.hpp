#pragma once
// The lanes behind WorkerPool: one thread per lane, which it owns, optionally pinned to a CPU,
// polling its queue for a while before sleeping on it.

#include <thread>
#include <vector>

#include "runtime/lane_set.hpp"

namespace ata::runtime::detail {

class ThreadLanes final : public LaneSet {
 public:
  // `caller_lane`: the last lane has no thread; each batch's caller runs it (CallerLanePool).
  explicit ThreadLanes(const PoolOptions& options, bool caller_lane = false);
  // shutdown(); on one of the pool's own threads (a task destroying its pool) it joins the
  // other threads and leaves the calling one to exit when its task returns.
  ~ThreadLanes() override;

  void shutdown() override;
  [[nodiscard]] bool lanes_own_threads() const noexcept override { return true; }

 private:
  static void serve(const LaneSet* set, Lane& lane, std::chrono::nanoseconds idle_spin);
  void wake(Lane& lane) noexcept override;

  std::vector<std::thread> threads_;  // threads_[i] runs lanes_[i]
  std::mutex join_mutex_;  // concurrent shutdown() callers wait here until threads are joined
};

}  // namespace ata::runtime::detail

#pragma once
// The lanes behind PostedLanes: a lane owns no thread; when it has a chunk to run it posts one
// run of itself through its launcher (to an Asio executor, a oneTBB arena, ...), which runs
// one chunk and posts the next run if more are queued. At most one run per lane is posted at a
// time, so a lane runs its chunks one after another, in order, even on a multi-threaded
// executor; between two chunks the executor runs its other work.

#include <functional>
#include <vector>

#include "ata/runtime/posted_lanes.hpp"
#include "runtime/lane_set.hpp"

namespace ata::runtime::detail {

class PostedLanesCore final : public LaneSet {
 public:
  PostedLanesCore(std::vector<PostedLanes::Launcher> launchers, const LaneOptions& options,
                  std::string what);
  // shutdown(); inside one of the lanes' tasks it waits for the other lanes only.
  ~PostedLanesCore() override;

  void shutdown() override;
  [[nodiscard]] bool lanes_own_threads() const noexcept override { return false; }
  // Shuts down (as the destructor does, so also inside one of the lanes' tasks), then waits
  // until every run the lanes posted has run or been destroyed, but the calling task's own.
  // Only for executors that run all their work, whatever happens: it waits for them.
  void close_and_drain() noexcept;

 private:
  class PostedLane;
  class PostedRun;

  void wake(Lane& lane) noexcept override;
  // Stops the lanes and waits until none runs a chunk, except `self` (the caller's own lane).
  void stop_and_wait(const Lane* self) noexcept;
  // Posts one run of `lane` (a PostedRun); if the run is never made, the lane's queued chunks
  // are abandoned.
  static void post(const std::shared_ptr<PostedLane>& lane) noexcept;
  static void run_once(const std::shared_ptr<PostedLane>& lane) noexcept;
  // `lane` has no run outstanding and none coming: its queued chunks can only be abandoned.
  static void stop_serving(PostedLane& lane) noexcept;

  std::mutex shutdown_mutex_;  // concurrent shutdown() callers wait here
};

}  // namespace ata::runtime::detail

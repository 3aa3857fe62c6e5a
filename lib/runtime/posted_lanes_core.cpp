#include "runtime/posted_lanes_core.hpp"

#include <atomic>
#include <string>
#include <utility>

#include "ata/core/error.hpp"

namespace ata::runtime::detail {

// A lane with its launcher. The posted work shares it, so it may run after the set is gone.
class PostedLanesCore::PostedLane final : public Lane {
 public:
  PostedLane(std::size_t index, const PoolOptions& options, PostedLanes::Launcher launcher,
             const LaneSet* set, std::exception_ptr failure)
      : Lane(index, options.slowdown(index), options.seed()),
        launch(std::move(launcher)),
        owner(set),
        post_failed(std::move(failure)) {}

  const PostedLanes::Launcher launch;
  const LaneSet* const owner;  // only compared, by OwnThreadMark: never dereferenced
  const std::exception_ptr post_failed;
  std::size_t runs = 0;  // guarded by queue_mutex_: PostedRun objects not yet destroyed
};

PostedLanesCore::PostedLanesCore(std::vector<PostedLanes::Launcher> launchers,
                                 const LaneOptions& options, std::string what)
    : LaneSet(PoolOptions(options), std::move(what)) {
  if (launchers.size() != options_.workers()) {
    throw InvalidArgument(this->what() + ": " + std::to_string(launchers.size()) +
                          " launchers for options of " + std::to_string(options_.workers()) +
                          " workers; give one launcher per worker");
  }
  for (std::size_t i = 0; i < launchers.size(); ++i) {
    if (!launchers[i]) {
      throw InvalidArgument(this->what() + ": lane " + std::to_string(i) + " has no launcher");
    }
  }
  const auto post_failed = std::make_exception_ptr(
      Error(this->what() + ": a lane's launcher failed to post its work, or its executor "
                           "dropped the work unrun, so a batch could not run on it"));
  lanes_.reserve(launchers.size());
  for (std::size_t i = 0; i < launchers.size(); ++i) {
    lanes_.push_back(
        std::make_shared<PostedLane>(i, options_, std::move(launchers[i]), this, post_failed));
  }
}

PostedLanesCore::~PostedLanesCore() {
  const Lane* self = OwnThreadMark::current_lane(this);
  if (self == nullptr) {
    shutdown();
    return;
  }
  // A task is destroying its own lanes: its chunk cannot wait for itself. It goes on,
  // stopped, and its run finds the lane stopping.
  std::lock_guard waiting(shutdown_mutex_);
  stop_and_wait(self);
  OwnThreadMark::forget(this);
}

void PostedLanesCore::shutdown() {
  if (is_own_thread()) {
    throw Error(what() +
                ": shutdown() called from inside one of the lanes' tasks would wait for itself; "
                "shut the lanes down from another thread");
  }
  std::lock_guard waiting(shutdown_mutex_);
  stop_and_wait(nullptr);
}

void PostedLanesCore::close_and_drain() noexcept {
  const Lane* self = OwnThreadMark::current_lane(this);
  {
    std::lock_guard waiting(shutdown_mutex_);
    stop_and_wait(self);
  }
  for (auto& lane : lanes_) {
    // Every lane is a PostedLane; the calling task's own run is still alive, inside the call.
    const auto& posted = static_cast<const PostedLane&>(*lane);
    const std::size_t own = lane.get() == self ? 1 : 0;
    std::unique_lock lock(lane->queue_mutex_);
    lane->queue_changed_.wait(lock, [&] { return posted.runs <= own; });
  }
}

void PostedLanesCore::stop_and_wait(const Lane* self) noexcept {
  stop_lanes();
  for (auto& lane : lanes_) {
    if (lane.get() == self) continue;
    std::unique_lock lock(lane->queue_mutex_);
    lane->queue_changed_.wait(lock, [&] { return lane->running_ == nullptr; });
  }
}

void PostedLanesCore::wake(Lane& lane) noexcept {
  {
    std::lock_guard lock(lane.queue_mutex_);
    if (lane.serving_ || lane.stopping_) return;
    lane.serving_ = true;
  }
  // Every lane of this set is a PostedLane, owned by lanes_.
  post(std::static_pointer_cast<PostedLane>(lanes_[lane.index()]));
}

// One posted run of a lane, shared by the copies of `work` a launcher makes. It runs at most
// once, whichever copy is called first. If every copy is gone unrun (the launcher threw, or
// the executor dropped the work: a thread_pool stopped, an io_context destroyed), the lane
// has no run outstanding any more, and nothing will run its queue: its batches fail with
// ata::Error rather than wait forever.
class PostedLanesCore::PostedRun {
 public:
  explicit PostedRun(std::shared_ptr<PostedLane> lane) noexcept : lane_(std::move(lane)) {
    std::lock_guard lock(lane_->queue_mutex_);
    ++lane_->runs;
  }
  PostedRun(const PostedRun&) = delete;
  PostedRun& operator=(const PostedRun&) = delete;
  ~PostedRun() {
    if (!ran_.load(std::memory_order_acquire)) stop_serving(*lane_);
    {
      std::lock_guard lock(lane_->queue_mutex_);
      --lane_->runs;
    }
    lane_->queue_changed_.notify_all();  // close_and_drain() may be waiting
  }

  void operator()() noexcept {
    if (!ran_.exchange(true, std::memory_order_acq_rel)) run_once(lane_);
  }

 private:
  const std::shared_ptr<PostedLane> lane_;
  std::atomic<bool> ran_{false};
};

void PostedLanesCore::post(const std::shared_ptr<PostedLane>& lane) noexcept {
  std::shared_ptr<PostedRun> run;
  try {
    run = std::make_shared<PostedRun>(lane);
  } catch (...) {
    stop_serving(*lane);
    return;
  }
  try {
    lane->launch([run = std::move(run)] { (*run)(); });
  } catch (...) {
    // Once the last copy of the run is gone (by now, unless the launcher kept one to run
    // later), ~PostedRun has failed the lane's queued batches.
  }
}

void PostedLanesCore::stop_serving(PostedLane& lane) noexcept {
  {
    std::lock_guard lock(lane.queue_mutex_);
    lane.serving_ = false;
  }
  abandon_queued(lane, lane.post_failed);
}

void PostedLanesCore::run_once(const std::shared_ptr<PostedLane>& lane) noexcept {
  Chunk* chunk = nullptr;
  {
    std::lock_guard lock(lane->queue_mutex_);
    chunk = take_next(*lane);
    if (chunk == nullptr) {
      lane->serving_ = false;
      return;
    }
  }
  bool more = false;
  {
    const OwnThreadMark mark(lane->owner, lane.get());
    const TightTimerSlack slack(*lane);
    more = run_chunk(*lane, *chunk);
  }
  if (!more) {
    std::unique_lock lock(lane->queue_mutex_);
    // A chunk queued since run_chunk() looked: submit() saw serving_ and did not post.
    more = lane->head_ != nullptr && !lane->stopping_;
    if (!more) lane->serving_ = false;
  }
  if (more) post(lane);
}

}  // namespace ata::runtime::detail

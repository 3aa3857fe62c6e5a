#include "ata/runtime/lanes.hpp"

#include "ata/core/error.hpp"

#include <string>
#include <utility>

#include "ata/runtime/caller_lane_pool.hpp"
#include "ata/runtime/posted_lanes.hpp"
#include "ata/runtime/worker_pool.hpp"
#include "runtime/posted_lanes_core.hpp"
#include "runtime/thread_lanes.hpp"

namespace ata::runtime {

detail::LaneSet& detail::core_of(Lanes& lanes) noexcept { return *lanes.core_; }

Lanes::Lanes(std::unique_ptr<detail::LaneSet> core) : core_(std::move(core)) {}

Lanes::~Lanes() = default;

std::size_t Lanes::size() const noexcept { return core_->size(); }

const PoolOptions& Lanes::options() const noexcept { return core_->options(); }

std::size_t Lanes::queued_chunks() const { return core_->queued(); }

std::vector<std::size_t> Lanes::stuck_lanes() const { return core_->stuck(); }

bool Lanes::has_caller_lane() const noexcept { return core_->caller_lane() < core_->size(); }

bool Lanes::is_shut_down() const noexcept { return core_->is_shut_down(); }

void Lanes::shutdown() { core_->shutdown(); }

WorkerPool::WorkerPool(std::size_t workers) : WorkerPool(PoolOptions(workers)) {}

WorkerPool::WorkerPool(const PoolOptions& options)
    : Lanes(std::make_unique<detail::ThreadLanes>(options)) {}

WorkerPool::~WorkerPool() = default;

namespace {

// The threads' options and one plain worker more, the caller lane.
PoolOptions with_caller_lane(const PoolOptions& threads) {
  PoolOptions options(threads.workers() + 1);
  options.set_seed(threads.seed()).set_idle_spin(threads.idle_spin());
  for (std::size_t i = 0; i < threads.workers(); ++i) {
    options.set_slowdown(i, threads.slowdown(i));
    if (const auto cpu = threads.cpu(i)) options.set_cpu(i, *cpu);
  }
  return options;
}

PoolOptions threads_of_caller_lane_pool(std::size_t threads) {
  if (threads == 0) {
    throw InvalidArgument(
        "a caller-lane pool needs at least one thread besides its caller (its asynchronous "
        "batches run on the threads), got 0");
  }
  return PoolOptions(threads);
}

}  // namespace

CallerLanePool::CallerLanePool(std::size_t threads)
    : CallerLanePool(threads_of_caller_lane_pool(threads)) {}

CallerLanePool::CallerLanePool(const PoolOptions& threads)
    : Lanes(std::make_unique<detail::ThreadLanes>(with_caller_lane(threads), true)) {}

CallerLanePool::~CallerLanePool() = default;

namespace {

LaneOptions options_for(const std::vector<PostedLanes::Launcher>& launchers, const char* what) {
  if (launchers.empty()) {
    throw InvalidArgument(std::string(what) + " needs at least one lane, got no launcher");
  }
  return LaneOptions(launchers.size());
}

}  // namespace

PostedLanes::PostedLanes(std::vector<Launcher> launchers)
    : PostedLanes(launchers, options_for(launchers, "posted lane set"), "posted lane set") {}

PostedLanes::PostedLanes(std::vector<Launcher> launchers, const LaneOptions& options)
    : PostedLanes(std::move(launchers), options, "posted lane set") {}

PostedLanes::PostedLanes(std::vector<Launcher> launchers, const LaneOptions& options,
                         const char* what)
    : Lanes(std::make_unique<detail::PostedLanesCore>(std::move(launchers), options, what)) {}

PostedLanes::~PostedLanes() = default;

void PostedLanes::shut_down_and_drain() noexcept {
  // Every PostedLanes is built on a PostedLanesCore.
  static_cast<detail::PostedLanesCore&>(detail::core_of(*this)).close_and_drain();
}

}  // namespace ata::runtime

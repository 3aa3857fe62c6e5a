#pragma once
/// @file
/// Lanes on Asio executors: a service runs its batches on threads it already owns. Header
/// only; needs Boost.Asio (1.81 or later), which the rest of the library does not.

#include <utility>  // before Asio: g++ 12 needs it there

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/post.hpp>
#include <functional>
#include <string>
#include <vector>

#include "ata/core/error.hpp"
#include "ata/runtime/posted_lanes.hpp"

namespace ata::runtime {

/// One lane per Asio executor you supply.
///
/// @code
/// boost::asio::thread_pool io(4);  // the service's own threads
/// std::vector<boost::asio::any_io_executor> executors(4, io.get_executor());
/// ata::runtime::AsioLanes lanes(executors);
/// ata::AtaAutoPolicy policy(lanes.size());
/// ata::runtime::BatchScheduler scheduler(lanes, policy);
/// auto [values, report] = scheduler.run(32, [](const ata::runtime::TaskContext& ctx) {
///   return estimate(ctx.task());
/// });  // or async_run(scheduler, 32, task, boost::asio::use_awaitable) in a coroutine
/// @endcode
///
/// Lane i posts its chunks to executors[i] (boost::asio::post), one at a time; several lanes
/// may share an executor, as above, and then run side by side on its threads. For a lane that
/// is one part of the machine, give it an io_context run by threads you pinned, or a strand.
/// The executors' contexts must run while batches are in flight (an io_context whose run()
/// returned never runs its lanes' chunks: keep a work guard, or give batches a deadline). See
/// PostedLanes for ordering, shutdown and what a task may block.
///
/// Thread-safety: as Lanes.
class AsioLanes final : public PostedLanes {
 public:
  /// One lane per executor, without slowdown. Throws ata::InvalidArgument for no executors or
  /// an empty one.
  explicit AsioLanes(const std::vector<boost::asio::any_io_executor>& executors)
      : AsioLanes(executors, LaneOptions(executors.empty() ? 1 : executors.size())) {}
  /// One lane per executor, with the slowdowns and seed of `options` (worker count equal to
  /// the number of executors). Throws ata::InvalidArgument otherwise.
  AsioLanes(const std::vector<boost::asio::any_io_executor>& executors, const LaneOptions& options)
      : PostedLanes(launchers(executors), options, "Asio lane set") {}

 private:
  static std::vector<Launcher> launchers(
      const std::vector<boost::asio::any_io_executor>& executors) {
    if (executors.empty()) {
      throw InvalidArgument("Asio lane set needs at least one lane, got no executor");
    }
    std::vector<Launcher> out;
    out.reserve(executors.size());
    for (std::size_t i = 0; i < executors.size(); ++i) {
      if (!executors[i]) {
        throw InvalidArgument("Asio lane set: executor " + std::to_string(i) + " is empty");
      }
      out.emplace_back([executor = executors[i]](std::function<void()> work) {
        boost::asio::post(executor, std::move(work));
      });
    }
    return out;
  }
};

}  // namespace ata::runtime

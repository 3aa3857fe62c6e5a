#pragma once
/// @file
/// Where a BatchScheduler runs its batches: n lanes, each a serial worker of stable identity.

#include <cstddef>
#include <memory>
#include <vector>

#include "ata/runtime/pool_options.hpp"

namespace ata::runtime {

class Lanes;
namespace detail {
class LaneSet;
/// The engine behind `lanes`, for the runtime's front ends. Not part of the API.
LaneSet& core_of(Lanes& lanes) noexcept;
}  // namespace detail

/// The workers a BatchScheduler dispatches to, whatever runs them.
///
/// @code
/// ata::runtime::WorkerPool pool(4);                     // 4 lanes on threads of their own
/// boost::asio::thread_pool io(4);                       // or: 4 lanes on an Asio pool
/// ata::runtime::AsioLanes on_io(std::vector<boost::asio::any_io_executor>(4, io.get_executor()));
/// ata::AtaAutoPolicy policy(4);
/// ata::runtime::BatchScheduler scheduler(on_io, policy); // the same engine either way
/// @endcode
///
/// A lane has a stable index i (policy worker i) and a FIFO queue of chunks; it runs one chunk
/// (a batch's share: a_i tasks in a row, or its part of a pull or greedy loop) at a time, with
/// the slowdown PoolOptions gives lane i, and reports each task's time and the chunk's end to
/// the engine. Kinds: WorkerPool (a thread per lane, optionally pinned), CallerLanePool (threads,
/// and each blocking batch's caller as the last lane), PostedLanes (a lane
/// runs where a function you supply posts it), and on top of it AsioLanes (Asio executors,
/// `<ata/runtime/asio_lanes.hpp>`, needs Boost) and ArenaLanes (oneTBB arenas,
/// `<ata/runtime/arena_lanes.hpp>`, needs oneTBB). Every mode (allocated, greedy, pull), the
/// asynchronous front end, deadlines and load-aware allocation work on every kind.
///
/// Shutting down (shutdown() or the destructor) refuses new batches (ShutdownError), fails
/// the batches still queued, stops the running ones (which fail with ShutdownError unless
/// their B results were in) and waits for the tasks still running. It allocates and throws
/// nothing, so it cannot leave a batch waiting forever.
///
/// Thread-safety: every method may be called from any thread; shutdown() from inside one of
/// the lanes' tasks throws ata::Error, since it would wait for itself.
class Lanes {
 public:
  Lanes(const Lanes&) = delete;
  Lanes& operator=(const Lanes&) = delete;
  /// Shuts down (see the kind's comment for a destructor running inside a task).
  virtual ~Lanes();

  /// Number of lanes n.
  [[nodiscard]] std::size_t size() const noexcept;
  /// The slowdowns, seed and polling the lanes were built with.
  [[nodiscard]] const PoolOptions& options() const noexcept;
  /// Chunks waiting in the lanes' queues, not counting those running.
  [[nodiscard]] std::size_t queued_chunks() const;
  /// The lanes quarantined now, in index order: each runs a task of a batch with backups or
  /// retries (SchedulerOptions) that has run past SchedulerOptions::stuck_after() x the lane's
  /// learned mean. Allocation skips such a lane until its task returns; the batch's other
  /// lanes take over its work. Thread-safe; a snapshot.
  [[nodiscard]] std::vector<std::size_t> stuck_lanes() const;
  /// Whether the last lane is each blocking batch's caller (CallerLanePool).
  [[nodiscard]] bool has_caller_lane() const noexcept;
  /// Whether shutdown() has started.
  [[nodiscard]] bool is_shut_down() const noexcept;
  /// Fails the batches with queued work (ShutdownError), requests stop of the running ones
  /// (which fail with ShutdownError too) and waits for the tasks still running. Idempotent;
  /// concurrent calls all return once it is done. Throws ata::Error when called from inside
  /// one of the lanes' tasks, which would wait for itself.
  void shutdown();

 protected:
  explicit Lanes(std::unique_ptr<detail::LaneSet> core);

 private:
  friend detail::LaneSet& detail::core_of(Lanes& lanes) noexcept;
  std::unique_ptr<detail::LaneSet> core_;
};

}  // namespace ata::runtime

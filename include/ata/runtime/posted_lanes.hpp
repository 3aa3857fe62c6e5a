#pragma once
/// @file
/// Lanes that run on threads someone else owns: each posts its work through a function.

#include <functional>
#include <vector>

#include "ata/runtime/lanes.hpp"
#include "ata/runtime/pool_options.hpp"

namespace ata::runtime {

/// Lanes that own no thread: lane i runs wherever its launcher sends its work.
///
/// @code
/// // Two lanes on two threads of a user's own work queue (any executor will do).
/// std::vector<ata::runtime::PostedLanes::Launcher> launchers;
/// for (auto* queue : {&queue_a, &queue_b}) {
///   launchers.push_back([queue](std::function<void()> work) { queue->push(std::move(work)); });
/// }
/// ata::runtime::PostedLanes lanes(std::move(launchers));
/// @endcode
///
/// When lane i has a chunk to run it calls launchers[i](work) once; `work` runs one chunk
/// (its tasks in a row) and, if more are queued, calls the launcher again. At most one `work`
/// per lane is outstanding, so a lane runs its chunks one at a time and in order even on a
/// multi-threaded executor, and between two chunks the executor runs its other work. A
/// launcher must run `work` later, on some thread, once (not inline: it is called while a
/// batch is being submitted, under the lanes' submission lock, so it must neither block on
/// these lanes nor submit to them); a second call of `work`, or of a copy, does nothing. If
/// the launcher throws, or `work` and its copies are destroyed unrun (an executor stopped
/// and destroyed with the work still queued), the chunks queued on that lane fail their
/// batches with ata::Error and the lane posts again for the next batch. AsioLanes and
/// ArenaLanes are launchers for Asio executors and oneTBB arenas.
///
/// The launchers' threads must keep running while batches are in flight: a lane whose
/// executor is stopped but keeps the work never runs its chunks (give such batches a
/// deadline). `work` only holds shared references, so it may run, or be destroyed unrun, after
/// the lanes are gone. Tasks block the thread they run on for their whole duration: give the
/// lanes threads that may block. A task's TaskContext::worker() is its lane's index.
///
/// BatchScheduler::run() blocks its caller: inside a task it throws ata::Error, but on an
/// executor thread between two chunks it cannot be told apart from any other thread, and
/// if the lanes need that thread the batch never ends. Use async_run() there.
///
/// Shutting down (see Lanes) waits for the chunks running on the executors' threads, not for
/// `work` posted but not yet started, which finds its lane stopped. The destructor may run
/// inside a task (the task then goes on, stopped); it waits for the other lanes only.
///
/// Thread-safety: as Lanes.
class PostedLanes : public Lanes {
 public:
  /// Sends `work` to run later on some thread, exactly once.
  using Launcher = std::function<void(std::function<void()> work)>;

  /// One lane per launcher, without slowdown. Throws ata::InvalidArgument for no launchers or
  /// an empty one.
  explicit PostedLanes(std::vector<Launcher> launchers);
  /// One lane per launcher, with the slowdowns, seed and polling of `options` (whose worker
  /// count must equal the number of launchers). Throws ata::InvalidArgument otherwise. No
  /// CPU pinning: the threads are not the lanes' to pin (pin the executor's), so PoolOptions
  /// do not compile here.
  PostedLanes(std::vector<Launcher> launchers, const LaneOptions& options);
  ~PostedLanes() override;
  PostedLanes(const PostedLanes&) = delete;
  PostedLanes& operator=(const PostedLanes&) = delete;

 protected:
  /// As above; `what` names the kind in errors ("executor lanes", "arena lanes").
  PostedLanes(std::vector<Launcher> launchers, const LaneOptions& options, const char* what);
  /// Shuts down as the destructor does (inside a task too), then waits until every `work`
  /// posted has run or been destroyed, except the calling task's own: for a kind whose
  /// executors always run their work (oneTBB arenas), which may then be destroyed with
  /// nothing of the lanes left in them. It would wait forever for an executor that keeps
  /// work it never runs.
  void shut_down_and_drain() noexcept;
};

}  // namespace ata::runtime

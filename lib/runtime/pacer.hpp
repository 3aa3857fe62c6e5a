#pragma once
// Late binding (LateBindingOptions): one queue of tasks that a
// scheduler's batches share, oldest batch first, handed out one task at a time to the lane
// that should run it.
//
// The rule (ata::reached_by_others, shared with the MPI ranks): a free lane i takes the first
// waiting task that the lanes busy now would not reach before i could finish it, or waits if
// they reach them all. A fast lane thus takes the oldest batch's next task, a slow one a task
// far enough back that its slowness delays nobody. A lane with no learned mean takes the
// oldest task at once (it gets measured), and a busy one is not counted on to reach any. The
// means are the policy's (Policy::stats()), refreshed at each submission.
//
// The pacer is a chunk queued on a lane when that lane should work: its run() takes tasks
// until the rule says wait, then the lane parks. Liveness: the pacer is queued on or running
// on at least one lane whenever a task waits. A lane parks only if the busy lanes will reach
// every waiting task, and each busy lane comes back to the pacer when its task ends; a lane
// that parks, and each submission, wakes the parked lanes the rule now gives a task, fastest
// first, and with no lane busy the rule gives the first of them one. While tasks wait and a
// lane is parked, a timer re-checks every (fastest parked lane's mean, at least 1 ms), so
// that a task does not wait forever behind a lane stuck in a task, nor behind a lane woken
// for it that has not started within the time the parked lane would take, or 10 ms (it
// runs other work). A lane whose run was dropped unrun (its executor gone, its launcher
// throwing) is "lost": never woken again until the next submission; with no other lane
// active, the batches fail with the lanes' error. Submission is one step with the lanes'
// shutdown (LaneSet::submit_chosen): a batch is refused unseen, or it completes, once.

#include <cstddef>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "ata/core/late_binding_rule.hpp"
#include "runtime/batch.hpp"
#include "runtime/deadline_timer.hpp"
#include "runtime/lane_set.hpp"

namespace ata::runtime::detail {

class Pacer final : public Chunk, public std::enable_shared_from_this<Pacer> {
 public:
  // `timer` re-checks parked lanes while tasks wait, until detach_timer(); `lanes` must
  // outlive the pacer, which its queue entries keep alive.
  Pacer(LaneSet& lanes, DeadlineTimer& timer);
  // Before the timer goes (with its scheduler): the pacer may outlive both, in a lane still
  // running it, and then re-checks only when tasks end or arrive. Thread-safe.
  void detach_timer() noexcept;

  // Each lane's learned mean in seconds (0: not measured yet); thread-safe.
  void set_means(std::span<const double> means);
  // Queues `batch` (a pull batch, never submitted to the lanes) behind the others and wakes
  // the lanes that should start on it. Throws ShutdownError, keeping nothing, once the
  // lanes are shut down, or std::bad_alloc.
  void submit(const std::shared_ptr<Batch>& batch);

  QueueEntry& entry(std::size_t lane) noexcept override { return lanes_state_[lane].entry; }
  void run(Lane& lane) noexcept override;
  void abandon(std::size_t lane, const std::exception_ptr& reason) noexcept override;
  void interrupt(const std::exception_ptr& reason) noexcept override;

 private:
  struct alignas(64) LaneState {
    QueueEntry entry;
    bool active = false;               // the pacer is queued or running on the lane
    bool lost = false;                 // its run was dropped unrun: not woken until a submission
    std::shared_ptr<Batch> current;    // the batch of the task it runs, for interrupt()
    std::vector<std::size_t> to_wake;  // scratch of the lane's run(), capacity n
  };

  // All under mutex_.
  // The waiting task lane `lane` should take now: its batch, entered, and `task`; null if it
  // should wait.
  std::shared_ptr<Batch> pick(std::size_t lane, double now, std::size_t& task) noexcept;
  // Drops the batches that are closed or have no task left, and counts the waiting tasks.
  std::size_t prune() noexcept;
  // Marks active, in `out`, the parked lanes that the rule gives a task now, fastest first;
  // returns recheck_at(now) for the lanes still parked.
  [[nodiscard]] std::optional<double> wake_parked(double now,
                                                  std::vector<std::size_t>& out) noexcept;

  // Under mutex_: when to look at the parked lanes again, if tasks wait while a lane is
  // parked and no check is armed (it then counts as armed). Task ends and submissions
  // re-check anyway; the timer covers a lane stuck in a task for longer than expected.
  [[nodiscard]] std::optional<double> recheck_at(double now) noexcept;
  // Arms the timer for `at` (takes mutex_).
  void arm(std::optional<double> at) noexcept;
  // On the timer's thread: wakes the parked lanes the rule now gives a task.
  void recheck() noexcept;

  // Queues the pacer on `lanes` (nothing locked); if the lanes are shut down, fails every
  // batch instead.
  void queue_on(std::span<const std::size_t> lanes) noexcept;
  // Fails every queued batch, and those whose tasks the lanes run, with `reason` (nothing
  // locked).
  void fail_all(const std::exception_ptr& reason) noexcept;

  // Re-checks no more often than this: tasks of microseconds would keep the timer busy.
  static constexpr double kMinRecheck = 1e-3;
  // A lane woken for a task may take this long to start (a thread woken on a loaded machine
  // waits for a core) before another lane takes the task from it.
  static constexpr double kStartGrace = 10e-3;

  LaneSet& lanes_;
  std::mutex mutex_;
  DeadlineTimer* timer_;                        // guarded by mutex_; null once detached
  bool recheck_armed_ = false;                  // guarded by mutex_
  std::deque<std::shared_ptr<Batch>> batches_;  // oldest first
  std::vector<LaneState> lanes_state_;
  // Per lane, what the rule sees (seconds on the steady clock): pending is "woken, its run
  // not started", for which the rule counts a task.
  std::vector<PacedWorker> paced_;
  std::vector<std::size_t> by_speed_;  // lane indices, unmeasured then fastest first
};

}  // namespace ata::runtime::detail

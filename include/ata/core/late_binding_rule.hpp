#pragma once
/// @file
/// Late binding: one queue of waiting tasks handed out one at a time, each to the worker that
/// should run it. One pure rule, shared by the drivers that pace (the thread runtime's
/// LateBindingOptions; the MPI ranks' RankOptions::late_binding).

#include <cstddef>
#include <span>

namespace ata {

/// One worker as the late-binding rule sees it at one instant.
struct PacedWorker {
  /// Its learned mean task time in seconds (over a network, plus its link's round trip: each
  /// task it takes crosses the link); 0 when not measured yet.
  double mean = 0.0;
  /// Running a task since `started`, or handed one then (`pending`).
  bool busy = false;
  /// Handed a task it has not started yet (a thread woken on a loaded machine waits for a core).
  bool pending = false;
  /// When its task started, or when it was handed one, in seconds on the driver's clock.
  double started = 0.0;
};

/// How many of `waiting` tasks the busy workers other than `worker` end before `worker` could
/// end one, at most `waiting`. The rule: a free worker i takes the waiting task at that
/// position in the queue, or waits when there is none, so a fast worker takes the oldest
/// task and a slow one a task far enough back that its slowness delays nobody.
///
/// Worker j, busy with a task that has run e_j = now - started_j, is expected free after
/// max(m_j - e_j, e_j) (a task far past its mean is taken for a long one, or a stuck one, not
/// for one about to end), then ends a task every m_j; by now + m_i it ends
/// floor((m_i - max(m_j - e_j, e_j)) / m_j) tasks. A worker not measured (mean 0) counts on
/// nobody's speed and is counted on by nobody. A pending worker takes one task, unless it has
/// not started within max(m_i, start_grace) seconds: it waits behind other work, and worker
/// i takes the task rather than wait too.
///
/// @code
/// std::vector<ata::PacedWorker> view{{1.0, true, false, 0.0}, {3.0, false, false, 0.0}};
/// // Worker 1 (mean 3) is free at t = 0; worker 0 (mean 1) ends 2 of 3 waiting tasks by t = 3.
/// std::size_t skip = ata::reached_by_others(view, 1, 0.0, 3, 0.01);  // 2: it takes the 3rd
/// @endcode
///
/// Pure: thread-safe.
[[nodiscard]] std::size_t reached_by_others(std::span<const PacedWorker> workers,
                                            std::size_t worker, double now, std::size_t waiting,
                                            double start_grace) noexcept;

}  // namespace ata

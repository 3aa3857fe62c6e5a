#pragma once
/// @file
/// What a running task knows about itself: its index, its worker, and whether to stop.

#include <cstddef>
#include <stop_token>
#include <utility>

namespace ata::runtime {

namespace detail {
class Batch;
class TaskBody;
template <class Task, class Result>
class TypedTaskBody;
}

/// Handed to every task the scheduler runs.
///
/// @code
/// scheduler.run(8, [](const ata::runtime::TaskContext& ctx) {
///   for (int step = 0; step < 1000 && !ctx.stop_requested(); ++step) { /* work */ }
///   return ctx.task() * 10 + ctx.worker();
/// });
/// @endcode
///
/// task() is the task's index in its batch: 0..B-1 in allocated and pull modes, and the start
/// order in greedy mode, where more than B tasks may start. A stop is requested when the
/// task's result is no longer wanted (greedy mode already has B results, another copy of the
/// task gave it, the copy ran its worker's restart budget, another task of the batch threw,
/// or the pool is shutting down); a long task should poll stop_requested() and
/// return early (or throw), since its result is discarded anyway. Read-only and used on one
/// worker thread.
class TaskContext {
 public:
  TaskContext(std::size_t task, std::size_t worker, std::stop_token stop) noexcept
      : task_(task), worker_(worker), stop_(std::move(stop)) {}

  /// Index of this task in its batch.
  [[nodiscard]] std::size_t task() const noexcept { return task_; }
  /// Index of the worker running it, 0..n-1, stable for the pool's lifetime.
  [[nodiscard]] std::size_t worker() const noexcept { return worker_; }
  /// The batch's stop token, e.g. for std::condition_variable_any::wait. For the task's run
  /// only: a later batch of the same scheduler may reuse its stop state (a batch's state is
  /// passed on if no stop was requested), so a token kept past its batch may see that one's.
  [[nodiscard]] const std::stop_token& stop_token() const noexcept { return stop_; }
  /// Whether the task's result is no longer wanted.
  [[nodiscard]] bool stop_requested() const noexcept { return stop_.stop_requested(); }

 private:
  // They move one context from task to task within a chunk.
  friend class detail::Batch;
  template <class Task, class Result>
  friend class detail::TypedTaskBody;
  std::size_t task_;
  std::size_t worker_;
  std::stop_token stop_;
};

}  // namespace ata::runtime

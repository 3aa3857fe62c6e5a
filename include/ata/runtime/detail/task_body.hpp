#pragma once
/// @file
/// Machinery behind BatchScheduler::run(): the batch's task and its result slots, seen by the
/// scheduler through one non-template interface. Not part of the API.

#include <cstddef>
#include <functional>
#include <new>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "ata/runtime/task_context.hpp"

namespace ata::runtime::detail {

/// Throws the ata::Error run() reports when the bookkeeping of a batch of `batch` tasks
/// cannot be allocated (`what`: which part).
[[noreturn]] void throw_out_of_memory(std::size_t batch, const char* what);

/// A batch's task, type-erased. Worker w calls execute() then, if the result is kept,
/// accept(w, slot); each worker touches only its own pending result and distinct slots.
class TaskBody {
 public:
  TaskBody(const TaskBody&) = delete;
  TaskBody& operator=(const TaskBody&) = delete;

  /// Runs the task for `ctx`; its result becomes worker ctx.worker()'s pending one.
  virtual void execute(const TaskContext& ctx) = 0;
  /// Moves worker `worker`'s pending result into result slot `slot` (< B).
  virtual void accept(std::size_t worker, std::size_t slot) = 0;
  /// Runs tasks first..end-1 in a row on ctx's worker, task j's result going straight into
  /// slot j, as execute() then accept() would: one call for a run of tasks, so that a chunk
  /// of tiny tasks costs a loop rather than two indirect calls per task. Stops before a task
  /// once ctx's stop is requested and returns the index of the first task not run (end when
  /// all ran). `ctx` ends with the last task's index.
  virtual std::size_t execute_range(TaskContext& ctx, std::size_t first, std::size_t end) = 0;

 protected:
  TaskBody() = default;
  ~TaskBody() = default;
};

template <class Task, class Result>
class TypedTaskBody final : public TaskBody {
 public:
  TypedTaskBody(Task& task, std::size_t batch, std::size_t workers) : task_(task) {
    try {
      slots_.resize(batch);
      pending_.resize(workers);
    } catch (const std::bad_alloc&) {
      throw_out_of_memory(batch, "result slots");
    }
  }

  void execute(const TaskContext& ctx) override {
    pending_[ctx.worker()].value.emplace(std::invoke(task_, ctx));
  }
  void accept(std::size_t worker, std::size_t slot) override {
    slots_[slot] = std::move(pending_[worker].value);
  }
  std::size_t execute_range(TaskContext& ctx, std::size_t first, std::size_t end) override {
    for (std::size_t task = first; task < end; ++task) {
      if (ctx.stop_requested()) return task;
      ctx.task_ = task;
      slots_[task].emplace(std::invoke(task_, std::as_const(ctx)));
    }
    return end;
  }

  /// The results, slot `slot_order[j]` at position j; slot j at j when slot_order is empty.
  [[nodiscard]] std::vector<Result> take(std::span<const std::size_t> slot_order) {
    std::vector<Result> results;
    try {
      results.reserve(slots_.size());
    } catch (const std::bad_alloc&) {
      throw_out_of_memory(slots_.size(), "results");
    }
    if (slot_order.empty()) {
      for (auto& slot : slots_) results.push_back(std::move(*slot));
    } else {
      for (std::size_t slot : slot_order) results.push_back(std::move(*slots_[slot]));
    }
    return results;
  }

 private:
  // One cache line each: workers write their pending results concurrently.
  struct alignas(64) Pending {
    std::optional<Result> value;
  };

  Task& task_;
  std::vector<std::optional<Result>> slots_;
  std::vector<Pending> pending_;
};

template <class Task>
class TypedTaskBody<Task, void> final : public TaskBody {
 public:
  TypedTaskBody(Task& task, std::size_t /*batch*/, std::size_t /*workers*/) : task_(task) {}

  void execute(const TaskContext& ctx) override { std::invoke(task_, ctx); }
  void accept(std::size_t /*worker*/, std::size_t /*slot*/) override {}
  std::size_t execute_range(TaskContext& ctx, std::size_t first, std::size_t end) override {
    for (std::size_t task = first; task < end; ++task) {
      if (ctx.stop_requested()) return task;
      ctx.task_ = task;
      std::invoke(task_, std::as_const(ctx));
    }
    return end;
  }

 private:
  Task& task_;
};

}  // namespace ata::runtime::detail

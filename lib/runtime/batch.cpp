#include "runtime/batch.hpp"

#include <utility>

#include "runtime/spin.hpp"

namespace ata::runtime::detail {

Batch::Batch(Dispatch mode, std::size_t batch, std::size_t round, Allocation allocation,
             std::size_t workers, TaskBody& body)
    : mode_(mode),
      batch_(batch),
      round_(round),
      allocation_(std::move(allocation)),
      body_(body),
      logs_(workers) {
  if (mode_ == Dispatch::allocated) {
    first_task_.resize(workers);
    std::size_t next = 0;
    for (std::size_t i = 0; i < workers; ++i) {
      first_task_[i] = next;
      next += allocation_[i];
      logs_[i].ran.reserve(allocation_[i]);
    }
  }
}

void Batch::run_on(PoolCore& pool, std::chrono::nanoseconds spin) {
  std::vector<std::size_t> targets;
  for (std::size_t i = 0; i < logs_.size(); ++i) {
    if (mode_ != Dispatch::allocated || allocation_[i] > 0) targets.push_back(i);
  }
  pending_chunks_.store(targets.size(), std::memory_order_relaxed);
  // Each queue entry holds a reference, so the batch outlives its last chunk.
  pool.submit(shared_from_this(), targets);
  const auto all_done = [&] { return pending_chunks_.load(std::memory_order_acquire) == 0; };
  spin_until(all_done, spin);
  std::exception_ptr error;
  {
    std::unique_lock lock(mutex_);
    finished_.wait(lock, all_done);
    // Take the exception out: a worker may drop the last reference to this batch after we
    // return, and the exception must then die on this thread, where it is caught, not there.
    error = std::exchange(error_, nullptr);
  }
  if (error) std::rethrow_exception(error);
}

void Batch::run(Worker& worker) noexcept {
  TaskContext ctx(0, worker.index(), stop_.get_token());
  try {
    switch (mode_) {
      case Dispatch::allocated:
        run_allocated(worker, ctx);
        break;
      case Dispatch::pull:
        run_pull(worker, ctx);
        break;
      case Dispatch::greedy:
        run_greedy(worker, ctx);
        break;
    }
  } catch (...) {
    fail(std::current_exception());
  }
  finish_chunk();
}

void Batch::abandon(std::size_t /*worker*/, const std::exception_ptr& reason) noexcept {
  fail(reason);
  finish_chunk();
}

std::chrono::nanoseconds Batch::run_task(Worker& worker, TaskContext& ctx, std::size_t task,
                                         Clock::time_point& since) {
  ctx.task_ = task;
  try {
    worker.run_slowed(body_, ctx, round_);
  } catch (...) {
    logs_[worker.index()].ran.push_back({task, Clock::now() - since, kDiscarded});
    throw;
  }
  const auto end = Clock::now();
  const auto duration = end - since;
  since = end;
  return duration;
}

void Batch::run_allocated(Worker& worker, TaskContext& ctx) {
  auto& log = logs_[worker.index()].ran;
  const std::size_t first = first_task_[worker.index()];
  const std::size_t end = first + allocation_[worker.index()];
  auto since = Clock::now();
  for (std::size_t task = first; task < end && !ctx.stop_requested(); ++task) {
    const auto duration = run_task(worker, ctx, task, since);
    body_.accept(worker.index(), task);
    log.push_back({task, duration, task});
  }
}

void Batch::run_pull(Worker& worker, TaskContext& ctx) {
  auto& log = logs_[worker.index()].ran;
  auto since = Clock::now();
  while (!ctx.stop_requested()) {
    const std::size_t task = next_task_.fetch_add(1, std::memory_order_relaxed);
    if (task >= batch_) return;
    const auto duration = run_task(worker, ctx, task, since);
    body_.accept(worker.index(), task);
    log.push_back({task, duration, task});
  }
}

void Batch::run_greedy(Worker& worker, TaskContext& ctx) {
  auto& log = logs_[worker.index()].ran;
  auto since = Clock::now();
  // Relaxed is enough: the results themselves are published by finish_chunk().
  while (accepted_.load(std::memory_order_relaxed) < batch_ && !ctx.stop_requested()) {
    const std::size_t task = next_task_.fetch_add(1, std::memory_order_relaxed);
    const auto duration = run_task(worker, ctx, task, since);
    const std::size_t slot = accepted_.fetch_add(1, std::memory_order_relaxed);
    if (slot < batch_) {
      body_.accept(worker.index(), slot);
      log.push_back({task, duration, slot});
      // The B-th result is in: whatever still runs is surplus.
      if (slot + 1 == batch_) stop_.request_stop();
    } else {
      log.push_back({task, duration, kDiscarded});
    }
  }
}

void Batch::fail(std::exception_ptr error) noexcept {
  {
    std::lock_guard lock(mutex_);
    if (!error_) error_ = std::move(error);
  }
  stop_.request_stop();
}

void Batch::finish_chunk() noexcept {
  // Once the count reaches 0 the waiter may destroy the task body: nothing after this touches
  // it. The batch itself lives on in the caller's reference to this chunk.
  if (pending_chunks_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    std::lock_guard lock(mutex_);
    finished_.notify_all();
  }
}

void Batch::collect(RoundReport& report, std::vector<std::size_t>& slot_order) const {
  const std::size_t workers = logs_.size();
  report.dispatch = mode_;
  report.busy.assign(workers, std::chrono::nanoseconds{0});
  slot_order.clear();

  // Every task index handed out was run and logged, so the indices are exactly 0..ran-1 and
  // each record has its place without sorting.
  std::size_t ran = 0;
  for (const auto& log : logs_) ran += log.ran.size();
  report.tasks.resize(ran);
  std::vector<std::size_t> accepted(workers, 0);
  std::vector<std::size_t> slot_of_task(mode_ == Dispatch::greedy ? ran : 0);
  for (std::size_t i = 0; i < workers; ++i) {
    std::chrono::nanoseconds busy{0};
    for (const RanTask& r : logs_[i].ran) {
      const bool kept = r.slot != kDiscarded;
      report.tasks[r.task] = TaskRecord{r.task, i, r.duration, kept};
      busy += r.duration;
      accepted[i] += kept ? 1 : 0;
    }
    report.busy[i] = busy;
  }
  report.allocation = Allocation(std::move(accepted));
  if (mode_ == Dispatch::greedy) {
    for (std::size_t i = 0; i < workers; ++i) {
      for (const RanTask& r : logs_[i].ran) slot_of_task[r.task] = r.slot;
    }
    slot_order.reserve(batch_);
    for (std::size_t slot : slot_of_task) {
      if (slot != kDiscarded) slot_order.push_back(slot);
    }
  }
}

}  // namespace ata::runtime::detail

#include "runtime/batch.hpp"

#include <new>
#include <string>
#include <utility>

#include "ata/core/error.hpp"

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
  targets_.reserve(workers);
  for (std::size_t i = 0; i < workers; ++i) {
    if (mode_ != Dispatch::allocated || allocation_[i] > 0) targets_.push_back(i);
  }
  shares_left_.store(targets_.size(), std::memory_order_relaxed);
}

void Batch::submit(PoolCore& pool) {
  pool_ = &pool;
  // Counted before the chunks are queued, so that a worker never settles more than was added.
  if (mode_ == Dispatch::allocated) {
    for (std::size_t i : targets_) pool.add_backlog(i, allocation_[i]);
  }
  try {
    // Each queue entry holds a reference, so the batch outlives its last queued chunk.
    pool.submit(shared_from_this(), targets_);
  } catch (...) {
    if (mode_ == Dispatch::allocated) {
      for (std::size_t i : targets_) pool.settle_backlog(i, allocation_[i]);
    }
    throw;
  }
}

void Batch::settle_share(Worker& worker) noexcept {
  const std::size_t i = worker.index();
  const std::size_t rest = allocation_[i] - logs_[i].settled;
  if (rest > 0) worker.settle_backlog(rest);
  logs_[i].settled = allocation_[i];
}

void Batch::cancel() noexcept {
  if (!results_complete()) decide(Outcome::cancelled, nullptr);
}

Batch::Outcome Batch::outcome() const noexcept {
  std::lock_guard lock(outcome_mutex_);
  return outcome_;
}

std::exception_ptr Batch::take_error() noexcept {
  std::lock_guard lock(outcome_mutex_);
  return std::exchange(error_, nullptr);
}

void Batch::run(Worker& worker) noexcept {
  if (!try_enter()) {  // closed: the task body may be gone already
    if (mode_ == Dispatch::allocated) settle_share(worker);
    return;
  }
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
    decide(Outcome::failed, std::current_exception());
  }
  if (mode_ == Dispatch::allocated) settle_share(worker);
  leave();
}

void Batch::abandon(std::size_t worker, const std::exception_ptr& reason) noexcept {
  // Never run here: the whole share leaves the backlog (the pool is shutting down, alive).
  if (mode_ == Dispatch::allocated) pool_->settle_backlog(worker, allocation_[worker]);
  // An allocated share runs on its own worker or not at all. A pull or greedy copy is one
  // of several: the batch is lost only if no worker reached it.
  if (mode_ == Dispatch::allocated ||
      abandoned_.fetch_add(1, std::memory_order_acq_rel) + 1 == targets_.size()) {
    decide(Outcome::failed, reason);
  }
}

void Batch::interrupt(const std::exception_ptr& reason) noexcept {
  if (!results_complete()) decide(Outcome::failed, reason);
}

std::chrono::nanoseconds Batch::run_task(Worker& worker, TaskContext& ctx, std::size_t task,
                                         Clock::time_point& since) {
  ctx.task_ = task;
  try {
    worker.run_slowed(body_, ctx, round_);
  } catch (...) {
    const auto end = Clock::now();
    record(worker.index(), {task, end - since, kDiscarded});
    since = end;
    throw;
  }
  const auto end = Clock::now();
  const auto duration = end - since;
  since = end;
  return duration;
}

void Batch::record(std::size_t worker, const RanTask& ran) {
  try {
    logs_[worker].ran.push_back(ran);
  } catch (const std::bad_alloc&) {
    throw Error("out of memory recording task " + std::to_string(ran.task) + " of a batch of " +
                std::to_string(batch_) + " tasks on worker " + std::to_string(worker));
  }
}

void Batch::run_allocated(Worker& worker, TaskContext& ctx) {
  const std::size_t i = worker.index();
  const std::size_t first = first_task_[i];
  const std::size_t end = first + allocation_[i];
  auto since = Clock::now();
  for (std::size_t task = first; task < end; ++task) {
    // Only a decided batch requests stop, and its results are not wanted any more.
    if (ctx.stop_requested()) return;
    const auto duration = run_task(worker, ctx, task, since);
    worker.settle_backlog(1);
    ++logs_[i].settled;
    body_.accept(i, task);
    // Reserved for a_i entries: cannot allocate.
    logs_[i].ran.push_back({task, duration, task});
  }
  if (shares_left_.fetch_sub(1, std::memory_order_acq_rel) == 1) close();
}

void Batch::run_pull(Worker& worker, TaskContext& ctx) {
  const std::size_t i = worker.index();
  auto since = Clock::now();
  while (!ctx.stop_requested()) {
    const std::size_t task = next_task_.fetch_add(1, std::memory_order_relaxed);
    if (task >= batch_) {
      close();  // every task is handed out; the batch completes when their workers leave
      return;
    }
    const auto duration = run_task(worker, ctx, task, since);
    body_.accept(i, task);
    record(i, {task, duration, task});
  }
}

void Batch::run_greedy(Worker& worker, TaskContext& ctx) {
  const std::size_t i = worker.index();
  auto since = Clock::now();
  // Relaxed is enough: the results themselves are published when the workers leave.
  while (accepted_.load(std::memory_order_relaxed) < batch_ && !ctx.stop_requested()) {
    const std::size_t task = next_task_.fetch_add(1, std::memory_order_relaxed);
    std::chrono::nanoseconds duration{0};
    try {
      duration = run_task(worker, ctx, task, since);
    } catch (...) {
      // A task ending once B results are in is surplus, whatever it ends with (often an
      // exception to honour its stop request): its exception is discarded with it. Before
      // that, it fails the batch, as a task of any mode does. It claims no result slot, so
      // every claimed slot is filled.
      if (accepted_.load(std::memory_order_relaxed) < batch_) throw;
      continue;
    }
    const std::size_t slot = accepted_.fetch_add(1, std::memory_order_relaxed);
    if (slot < batch_) {
      body_.accept(i, slot);
      record(i, {task, duration, slot});
      // The B-th result is claimed: whatever still runs is surplus. The outcome is settled
      // when the workers inside have left (their accept() may still fail).
      if (slot + 1 == batch_) {
        stop_.request_stop();
        close();
      }
    } else {
      record(i, {task, duration, kDiscarded});
    }
  }
}

bool Batch::results_complete() const noexcept {
  switch (mode_) {
    case Dispatch::allocated:
      return shares_left_.load(std::memory_order_acquire) == 0;
    case Dispatch::greedy:
      return accepted_.load(std::memory_order_acquire) >= batch_;
    case Dispatch::pull:
      break;  // tasks handed out may still run; only completion tells
  }
  return false;
}

bool Batch::decide(Outcome outcome, const std::exception_ptr& error) noexcept {
  {
    std::lock_guard lock(outcome_mutex_);
    if (outcome_ != Outcome::pending) return false;
    outcome_ = outcome;
    error_ = error;
  }
  stop_.request_stop();
  close();
  return true;
}

bool Batch::try_enter() noexcept {
  std::uint64_t state = state_.load(std::memory_order_acquire);
  do {
    if ((state & kClosed) != 0) return false;
  } while (!state_.compare_exchange_weak(state, state + 1, std::memory_order_acq_rel,
                                         std::memory_order_acquire));
  return true;
}

void Batch::leave() noexcept {
  // Nothing after this touches the task body: once the batch completes, its owner may
  // destroy it. The batch itself lives on in the caller's reference to this chunk.
  if (state_.fetch_sub(1, std::memory_order_acq_rel) == (kClosed | 1)) complete();
}

void Batch::close() noexcept {
  if (state_.fetch_or(kClosed, std::memory_order_acq_rel) == 0) complete();
}

void Batch::complete() noexcept {
  {
    std::lock_guard lock(outcome_mutex_);
    if (outcome_ == Outcome::pending) outcome_ = Outcome::succeeded;
  }
  on_complete();
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

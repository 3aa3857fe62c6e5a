#include "ata/runtime/detail/batch_operation.hpp"

#include <limits>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "ata/core/error.hpp"
#include "ata/runtime/batch_scheduler.hpp"
#include "ata/runtime/caller_lane_pool.hpp"
#include "core/checks.hpp"
#include "runtime/batch.hpp"
#include "runtime/durations.hpp"
#include "runtime/lane_set.hpp"
#include "runtime/quarantine.hpp"
#include "runtime/scheduler_engine.hpp"
#include "runtime/spin.hpp"

namespace ata::runtime::detail {

[[noreturn]] void throw_out_of_memory(std::size_t batch, const char* what) {
  throw Error("out of memory for the " + std::string(what) +
              " of a batch of B = " + std::to_string(batch) + " tasks");
}

// The batch a BatchOperation submits; tells its operation when it is complete.
class OperationBatch final : public Batch {
 public:
  OperationBatch(const Plan& plan, Timing timing, std::size_t batch, std::size_t round,
                 TaskBody& body, bool task_records, std::shared_ptr<BatchOperation> owner,
                 std::optional<Recovery> recovery, std::stop_source stop)
      : Batch(plan, timing, batch, round, body, task_records, std::move(recovery), std::move(stop)),
        owner_(std::move(owner)) {}

 private:
  void on_complete() noexcept override {
    // Moved out: the operation keeps the batch, and the batch must not keep the operation.
    const auto owner = std::move(owner_);
    owner->batch_completed(*this);
  }

  std::shared_ptr<BatchOperation> owner_;
};

namespace {

// Quarantine (runtime/quarantine.hpp) applied to a plan of quotas.
void quotas_off_stuck(std::span<const std::size_t> stuck, Plan& plan) {
  if (stuck.empty()) return;
  Allocation quotas = plan.quotas();
  move_off_stuck(stuck, quotas);
  for (std::size_t i = 0; i < quotas.size(); ++i) plan.set_quota(i, quotas[i]);
}

// The policy's plan must give every lane a role and account for exactly B tasks: the batch
// sizes its result slots and task ranges from it. The thread runtime runs every plan as the
// simulator does (lib/sim/simulation.cpp): quotas and races, alone or together, with their
// backups, retries and restart budgets (backups add nothing to a fungible race).
void require_runnable_plan(const Policy& policy, const Plan& plan, std::size_t batch,
                           std::size_t workers) {
  plan.check(batch, workers, policy.name());
  if (plan.dispatch() == Dispatch::allocated && plan.quotas().total() != batch) {
    throw Error("policy '" + std::string(policy.name()) + "' allocated " +
                std::to_string(plan.quotas().total()) + " tasks for a batch of B = " +
                std::to_string(batch) + "; an allocation must sum to B");
  }
}

// An asynchronous batch's caller does not wait, so the caller lane (index `caller`) gets no
// part of it: its quota goes to the other lanes as a stuck lane's would, and a race runs
// without it (over every other lane if it raced alone).
void leave_out_caller(std::size_t caller, Plan& plan) {
  if (plan.is_racer(caller)) {
    plan.set_idle(caller);
    if (plan.racers().empty()) {
      for (std::size_t i = 0; i < caller; ++i) plan.set_racer(i);
    }
  } else if (plan.quotas()[caller] > 0) {
    const std::size_t stuck[] = {caller};
    quotas_off_stuck(stuck, plan);
  }
}

// A batch of quotas that the caller is expected to run within CallerLanePool::kCallerAloneWork
// runs on the caller alone: waking a lane for it would cost more than the batch.
void run_small_on_caller(const WorkerStats& caller_stats, std::size_t batch, std::size_t caller,
                         Plan& plan) {
  constexpr double kAlone =
      std::chrono::duration<double>(CallerLanePool::kCallerAloneWork).count();
  if (caller_stats.count() > 0 && static_cast<double>(batch) * caller_stats.mean() <= kAlone) {
    for (std::size_t i = 0; i < plan.workers(); ++i) plan.set_quota(i, i == caller ? batch : 0);
  }
}

// Whether a quota plan asks for what only a batch bound on arrival runs: backups, retries or
// restart budgets of its own. Under late binding such a batch binds on arrival.
bool needs_binding_on_arrival(const Plan& plan) {
  const bool backed_up = plan.backups() && plan.backups()->enabled();
  const bool retried = plan.retries() && *plan.retries() > 0;
  return backed_up || retried || plan.has_restarts();
}

}  // namespace

BatchOperation::BatchOperation(BatchScheduler& scheduler, std::size_t batch, TaskBody& body,
                               const BatchOptions& options, std::shared_ptr<void> owner)
    : scheduler_(scheduler),
      batch_(batch),
      body_(body),
      owner_(std::move(owner)),
      options_(options),
      start_(std::chrono::steady_clock::now()) {}

BatchOperation::~BatchOperation() = default;

std::chrono::nanoseconds BatchOperation::idle_spin() const {
  return scheduler_.lanes_.options().idle_spin();
}

void BatchOperation::start_blocking() {
  if (core_of(scheduler_.lanes_).is_own_thread()) {
    throw Error(
        "BatchScheduler::run() called from a task of its own pool would wait for "
        "itself; run batches from other threads");
  }
  blocking_ = true;
  scheduler_.engine_->admission.enter();
  stage_ = Stage::admitted;  // without the mutex: nothing else can reach the operation yet
  try {
    arm_deadline();
  } catch (...) {
    finish_unsubmitted(BatchStatus::failed, std::current_exception(), true);
    return;
  }
  launch();
}

void BatchOperation::start_async() noexcept {
  std::optional<Admission::Ticket> ticket;
  try {
    arm_deadline();
    // The callback keeps this operation alive while it waits in the queue.
    ticket = scheduler_.engine_->admission.enter_or_queue(
        [self = shared_from_this()] { self->admitted_from_queue(); });
  } catch (...) {
    finish_unsubmitted(BatchStatus::failed, std::current_exception(), false);
    return;
  }
  {
    std::lock_guard lock(mutex_);
    if (ticket) {
      // Unless admitted already, between enter_or_queue() and here.
      if (stage_ == Stage::created) {
        stage_ = Stage::queued;
        ticket_ = *ticket;
      }
      return;
    }
    stage_ = Stage::admitted;
  }
  launch();
}

void BatchOperation::admitted_from_queue() noexcept {
  {
    std::lock_guard lock(mutex_);
    stage_ = Stage::admitted;
  }
  on_admitted();
}

void BatchOperation::launch() noexcept {
  std::unique_lock lock(mutex_);
  const std::optional<BatchStatus> requested = requested_;
  lock.unlock();
  if (requested) {
    finish_unsubmitted(*requested, nullptr, true);
    return;
  }
  try {
    submit_now();
  } catch (...) {
    finish_unsubmitted(BatchStatus::failed, std::current_exception(), true);
  }
}

void BatchOperation::drop_launch() noexcept {
  {
    std::lock_guard lock(mutex_);
    if (stage_ != Stage::admitted) return;
    stage_ = Stage::finished;
    status_ = BatchStatus::failed;
  }
  disarm_deadline();
  scheduler_.engine_->admission.leave();
}

void BatchOperation::submit_now() {
  Policy& policy = scheduler_.policy_;
  LaneSet& core = core_of(scheduler_.lanes_);
  const std::size_t workers = core.size();
  const SchedulerOptions& options = scheduler_.options_;
  SchedulerEngine& engine = *scheduler_.engine_;
  Plan& plan = kept_.plan;
  std::optional<Recovery> recovery;
  Pacer* pacer = engine.pacer.get();
  const bool caller_lane = blocking_ && core.caller_lane() < workers;
  {
    std::lock_guard lock(policy.mutex());
    if (!engine.kept.empty()) {
      kept_ = std::move(engine.kept.back());
      engine.kept.pop_back();
    }
    try {
      // A throwing plan() leaves the policy's round as it was: so does the scheduler.
      if (pacer == nullptr && options.load_aware()) {
        auto& backlog = engine.backlog;
        backlog.assign(workers, 0.0);
        core.backlog(backlog);
        policy.plan(batch_, backlog, plan);
      } else {
        policy.plan(batch_, plan);
      }
      round_ = ++scheduler_.rounds_;
      require_runnable_plan(policy, plan, batch_, workers);
      // Late binding hands out quotas only, and only those without backups, retries or
      // restarts of their own: a race hands its tasks out by itself already, and the others
      // bind on arrival.
      if (plan.dispatch() != Dispatch::allocated || needs_binding_on_arrival(plan)) {
        pacer = nullptr;
      }
      // A stuck lane is quarantined: its quotas go to the others, whatever the policy.
      if (pacer == nullptr && plan.dispatch() == Dispatch::allocated) {
        quotas_off_stuck(core.stuck(), plan);
      }
      if (core.caller_lane() < workers) {
        if (!blocking_) {
          leave_out_caller(core.caller_lane(), plan);
        } else if (plan.dispatch() == Dispatch::allocated) {
          run_small_on_caller(policy.stats(core.caller_lane()), batch_, core.caller_lane(), plan);
        }
      }
      if (pacer != nullptr) {
        // The pacer hands the tasks out one by one, by the learned means.
        plan = Plan::race(workers, RaceKind::indexed);
        auto& means = engine.means;
        means.resize(workers);
        for (std::size_t i = 0; i < workers; ++i) means[i] = policy.stats(i).mean();
        pacer->set_means(means);
      } else {
        // The plan's own backups and retries override the scheduler's, as in the simulator.
        // Quotas with any of them are tracked (an indexed race always is, below); a fungible
        // race takes its retries and restart budgets alone (Batch::run_greedy).
        const Dispatch dispatch = plan.dispatch();
        const bool fungible = !plan.racers().empty() && plan.race_kind() == RaceKind::fungible;
        BackupOptions backups = plan.backups().value_or(options.backups());
        if (!backups.min_overdue) {
          backups.min_overdue = std::chrono::duration<double>(options.kDefaultMinOverdue).count();
        }
        const std::size_t retries = plan.retries().value_or(options.retries());
        // Quotas on a pool with a caller lane are tracked too, whatever their backups, so that
        // the caller may take over the shares of lanes that have not reached the batch. Not a
        // batch the caller runs alone: nothing to take over, and no other worker with a role
        // that could hedge it (BackupWorker::available).
        const bool caller_quotas = caller_lane && dispatch == Dispatch::allocated;
        const bool caller_alone = caller_quotas && plan.quotas()[core.caller_lane()] == batch_;
        const bool caller_takes_over = caller_quotas && !caller_alone;
        const bool recovers = retries > 0 || plan.has_restarts();
        const bool hedged = backups.enabled() && !caller_alone;
        // An indexed race is always tracked: its lanes claim the race's indices a chunk at a
        // time (Batch::chunk_length) rather than one by one from a shared counter.
        const bool tracked = !fungible && (dispatch != Dispatch::allocated || caller_takes_over ||
                                           hedged || recovers);
        if (tracked || (fungible && recovers)) {
          recovery.emplace();
          recovery->backups = backups;
          recovery->retries = retries;
          recovery->stuck_after = options.stuck_after();
          recovery->learned.assign(policy.all_stats().begin(), policy.all_stats().end());
          recovery->timer = &engine.deadlines;
          recovery->cache = engine.tracked_states;
          recovery->owner = owner_;
          if (plan.has_restarts()) {
            recovery->restart_after.resize(workers);
            for (std::size_t i = 0; i < workers; ++i) {
              recovery->restart_after[i] = plan.restart_after(i);
            }
          }
          recovery->caller = caller_waiter();
        }
      }
    } catch (const std::bad_alloc&) {
      throw_out_of_memory(batch_, "plan");
    }
    observe_every_task_ = policy.needs_every_sample();
  }
  // Chunk timing wherever it is asked for (the batch times tasks one by one where it hands
  // them out one by one); a policy that observes every sample then gets each task with its
  // chunk's mean, so the batch keeps the records it reads them from.
  const Timing timing = pacer != nullptr        ? Timing::samples
                        : options.time_chunks() ? Timing::chunk_means
                        : observe_every_task_   ? Timing::samples
                                                : Timing::summaries;
  if (Observer* observer = scheduler_.observer_) {
    observer->on_batch_start(BatchStart{round_, batch_, plan, start_});
    observer_ = observer;
  }
  std::shared_ptr<Batch> job;
  try {
    job = std::make_shared<OperationBatch>(
        plan, timing, batch_, round_, body_, options.task_records() || observe_every_task_,
        shared_from_this(), std::move(recovery), std::move(kept_.stop));
  } catch (const std::bad_alloc&) {
    throw_out_of_memory(batch_, "task records");
  }
  // Made before anything is queued: from then on a task may destroy the lanes.
  if (caller_lane && !kept_.caller_lane) {
    try {
      kept_.caller_lane =
          std::make_unique<Lane>(core.caller_lane(), Slowdown(), core.options().seed());
    } catch (const std::bad_alloc&) {
      throw_out_of_memory(batch_, "caller lane");
    }
  }
  // Throws with nothing queued: the batch then never completes.
  if (pacer != nullptr) {
    pacer->submit(job);
  } else {
    job->submit(core);
    if (job->has_caller_role()) caller_share_ = job;
  }
  // Published only now: a cancel() during submission found Stage::admitted and left its
  // request in requested_; the batch may even have completed already.
  std::unique_lock lock(mutex_);
  if (stage_ != Stage::finished) {
    stage_ = Stage::running;
    running_ = job;
  }
  const bool requested = requested_.has_value();
  lock.unlock();
  if (requested) job->cancel();
}

void BatchOperation::cancel(BatchStatus reason) noexcept {
  std::shared_ptr<Batch> running;
  {
    std::lock_guard lock(mutex_);
    if (stage_ == Stage::finished || requested_) return;
    requested_ = reason;
    if (stage_ == Stage::running) {
      running = running_;
    } else if (stage_ != Stage::queued || !scheduler_.engine_->admission.withdraw(ticket_)) {
      return;  // created, admitted or being admitted: launch() sees requested_
    }
  }
  if (running) {
    running->cancel();  // may complete the batch, and so this operation, on this thread
  } else {
    finish_unsubmitted(reason, nullptr, false);  // withdrawn from the queue: no slot held
  }
}

void BatchOperation::batch_completed(Batch& batch) noexcept {
  {
    std::lock_guard lock(mutex_);
    const Batch::Outcome outcome = batch.outcome();
    if (outcome == Batch::Outcome::failed) error_ = batch.take_error();
    // Cancelled (a complete batch is never pending): for the reason cancel() gave.
    status_ = outcome == Batch::Outcome::succeeded ? BatchStatus::succeeded
              : outcome == Batch::Outcome::failed  ? BatchStatus::failed
                                                   : requested_.value_or(BatchStatus::cancelled);
    running_.reset();
    completed_ = batch.shared_from_this();
    stage_ = Stage::finished;
  }
  disarm_deadline();
  scheduler_.engine_->admission.leave();
  on_finished();
}

void BatchOperation::finish_unsubmitted(BatchStatus status, std::exception_ptr error,
                                        bool holds_slot) noexcept {
  {
    std::lock_guard lock(mutex_);
    if (stage_ == Stage::finished) return;
    stage_ = Stage::finished;
    status_ = status;
    error_ = std::move(error);
  }
  disarm_deadline();
  if (holds_slot) scheduler_.engine_->admission.leave();
  on_finished();
}

void BatchOperation::arm_deadline() {
  if (options_.deadline <= std::chrono::nanoseconds{0}) return;  // none (negative: refused)
  // Saturated: a deadline beyond the clock's range (nanoseconds::max()) is none.
  const auto when = saturating_add(start_, options_.deadline);
  if (when == std::chrono::steady_clock::time_point::max()) return;
  const auto id = scheduler_.engine_->deadlines.schedule(when, [weak = weak_from_this()] {
    if (const auto self = weak.lock()) self->cancel(BatchStatus::timed_out);
  });
  std::lock_guard lock(mutex_);
  deadline_ = id;
}

void BatchOperation::disarm_deadline() noexcept {
  if (options_.deadline <= std::chrono::nanoseconds{0}) return;  // none armed
  std::unique_lock lock(mutex_);
  const std::optional<std::uint64_t> id = std::exchange(deadline_, std::nullopt);
  lock.unlock();
  if (id) scheduler_.engine_->deadlines.cancel(*id);
}

BatchStatus BatchOperation::finish(RoundReport& report, std::vector<std::size_t>& slot_order,
                                   std::exception_ptr& error) {
  if (status_ != BatchStatus::succeeded) {
    error = std::exchange(error_, nullptr);
    notify_end(status_ == BatchStatus::failed      ? BatchOutcome::failed
               : status_ == BatchStatus::cancelled ? BatchOutcome::cancelled
                                                   : BatchOutcome::timed_out,
               nullptr);
    return status_;
  }
  try {
    completed_->collect(report, slot_order);
  } catch (const std::bad_alloc&) {
    notify_end(BatchOutcome::failed, nullptr);
    throw_out_of_memory(batch_, "round report");
  }
  report.round = round_;
  Policy& policy = scheduler_.policy_;
  {
    std::lock_guard lock(policy.mutex());
    try {
      // The one place where measured durations become the core's seconds: one summary per
      // worker, made by the worker while it ran, or, for a policy that needs them, every
      // accepted task's time.
      if (observe_every_task_ || completed_->timing() == Timing::samples) {
        for (const TaskRecord& task : report.tasks) {
          if (task.accepted) {
            policy.observe(task.worker, std::chrono::duration<double>(task.duration).count());
          }
        }
      } else {
        for (std::size_t i = 0; i < report.busy.size(); ++i) {
          policy.observe_summary(i, completed_->summary(i));
        }
      }
      // Copies stopped because another finished first: each ran at least this long.
      for (const Censored& stopped : completed_->censored()) {
        policy.observe_censored(stopped.worker, stopped.seconds);
      }
    } catch (...) {
      // The batch ran and its results are good: return them, and report the policy's failure.
      report.learning_error = std::current_exception();
    }
    if (observer_ != nullptr) observer_->on_learned(round_, policy.all_stats());
    // A batch that owns its task may have late copies inside, still reading its stop source.
    if (!owner_) kept_.stop = completed_->take_stop();
    auto& kept = scheduler_.engine_->kept;  // for the next batches (submit_now())
    if (kept.size() < kept.capacity()) kept.push_back(std::move(kept_));
  }
  // Kept for learning only: the caller asked for no records (their memory goes too).
  if (!scheduler_.options_.task_records()) std::vector<TaskRecord>().swap(report.tasks);
  report.wall = std::chrono::steady_clock::now() - start_;
  notify_end(BatchOutcome::succeeded, &report);
  return BatchStatus::succeeded;
}

void BatchOperation::notify_end(BatchOutcome outcome, const RoundReport* report) const noexcept {
  if (observer_ != nullptr) observer_->on_batch_end(BatchEnd{round_, batch_, outcome, report});
}

void BatchOperation::run_caller_share() noexcept {
  // A task on the caller lane that starts a batch of the same pool is refused as from any lane.
  const OwnThreadMark mark(caller_share_->lanes(), kept_.caller_lane.get());
  caller_share_->run(*kept_.caller_lane);
}

void BatchOperation::drop_caller_share() noexcept { caller_share_.reset(); }

void BlockingOperation::run(RoundReport& report, std::vector<std::size_t>& slot_order) {
  // Read before the batch starts: one of its tasks may destroy the pool.
  const auto spin = idle_spin();
  start_blocking();
  // Its part, then again each time the batch summons it (a backup copy to run), until done.
  while (has_caller_share() && !done_.load(std::memory_order_acquire)) {
    summoned_.store(false, std::memory_order_relaxed);
    run_caller_share();
    wait(
        [&] {
          return done_.load(std::memory_order_acquire) || summoned_.load(std::memory_order_acquire);
        },
        spin);
  }
  wait([&] { return done_.load(std::memory_order_acquire); }, spin);
  drop_caller_share();
  std::exception_ptr error;
  const BatchStatus status = finish(report, slot_order, error);
  if (status == BatchStatus::succeeded) return;
  // Taken out of the batch: a worker may drop the last reference to it after we return, and
  // the exception must then die on this thread, where it is caught, not there.
  if (status == BatchStatus::failed) std::rethrow_exception(error);
  // Cancelled or timed out.
  throw DeadlineError(
      "a batch of B = " + std::to_string(batch_size()) + " missed its deadline of " +
      ata::detail::to_text(std::chrono::duration<double, std::milli>(options().deadline).count()) +
      " ms");
}

template <class Ready>
void BlockingOperation::wait(Ready ready, std::chrono::nanoseconds spin) {
  const auto woken = [&] { return ready() || due(timer_at_.load(std::memory_order_acquire)); };
  while (!ready()) {
    if (!spin_until(woken, spin)) {
      std::unique_lock lock(mutex_);
      while (!woken()) {
        const Clock::rep at = timer_at_.load(std::memory_order_acquire);
        if (at == kNoTimer) {
          finished_.wait(lock);
        } else {
          finished_.wait_until(lock, Clock::time_point(Clock::duration(at)));
        }
      }
    }
    if (Batch* batch = take_due_timer()) batch->on_timer();
  }
}

Batch* BlockingOperation::take_due_timer() noexcept {
  Clock::rep at = timer_at_.load(std::memory_order_acquire);
  if (!due(at)) return nullptr;
  // A wake_at() since the load set another moment: that one is taken when it comes.
  if (!timer_at_.compare_exchange_strong(at, kNoTimer, std::memory_order_acq_rel)) return nullptr;
  return timed_.load(std::memory_order_relaxed);
}

void BlockingOperation::wake_at(Batch& batch, Clock::time_point when) noexcept {
  timed_.store(&batch, std::memory_order_relaxed);
  const Clock::rep at = when.time_since_epoch().count();
  // A waiter asleep until a later moment (or none) must wake sooner; one polling sees it.
  if (at < timer_at_.exchange(at, std::memory_order_acq_rel)) {
    std::lock_guard lock(mutex_);
    finished_.notify_all();
  }
}

void BlockingOperation::summon_caller() noexcept {
  std::lock_guard lock(mutex_);
  summoned_.store(true, std::memory_order_release);
  finished_.notify_all();
}

void BlockingOperation::on_finished() noexcept {
  std::lock_guard lock(mutex_);
  done_.store(true, std::memory_order_release);
  finished_.notify_all();
}

}  // namespace ata::runtime::detail

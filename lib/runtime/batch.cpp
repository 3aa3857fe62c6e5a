#include "runtime/batch.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <new>
#include <numeric>
#include <string>
#include <type_traits>
#include <utility>

#include "ata/core/error.hpp"
#include "runtime/durations.hpp"

namespace ata::runtime::detail {

Batch::Batch(const Plan& plan, Timing timing, std::size_t batch, std::size_t round, TaskBody& body,
             bool task_records, std::optional<Recovery> recovery, std::stop_source stop)
    : mode_(plan.dispatch()),
      fungible_(!plan.racers().empty() && plan.race_kind() == RaceKind::fungible),
      // Chunk timing is for allocated mode, untracked. A tracked batch times every copy (a backup
      // needs each one's start); each lane sums the times of the copies it won as it claims
      // them. A fungible race is never tracked: its results are any B, not B indices.
      timing_(timing == Timing::chunk_means &&
                      (mode_ != Dispatch::allocated || (recovery.has_value() && !fungible_))
                  ? Timing::summaries
                  : timing),
      keep_records_((mode_ == Dispatch::allocated || (recovery.has_value() && !fungible_)) &&
                    (task_records || timing_ == Timing::samples)),
      clock_(TaskClock::instance()),
      origin_ticks_(clock_.now()),
      origin_(std::chrono::steady_clock::now()),
      batch_(batch),
      round_(round),
      allocation_(plan.quotas()),
      body_(body),
      logs_(plan.workers()),
      stop_(stop.stop_possible() ? std::move(stop) : std::stop_source()) {
  const std::size_t workers = plan.workers();
  // Accepted by default: every task of a complete share is kept.
  if (keep_records_) records_.resize(batch);
  if (has_shares()) {
    std::size_t next = 0;
    targets_.reserve(workers);
    for (std::size_t i = 0; i < workers; ++i) {
      logs_[i].first = next;
      next += allocation_[i];
      if (allocation_[i] > 0 || plan.is_racer(i)) targets_.push_back(i);
    }
    if (fungible_) {
      for (std::size_t i : plan.racers()) logs_[i].races = true;
      next_task_.store(next, std::memory_order_relaxed);  // the race numbers after the quotas
    }
  } else {
    targets_.assign(plan.racers().begin(), plan.racers().end());
  }
  shares_left_.store(targets_.size(), std::memory_order_relaxed);
  if (recovery && fungible_) {
    // Any B results will do: each of them may take retries + 1 attempts.
    const std::size_t most = std::numeric_limits<std::size_t>::max();
    failures_allowed_ = recovery->retries > most / batch_ ? most : recovery->retries * batch_;
    if (!recovery->restart_after.empty() && recovery->timer != nullptr) {
      racers_ = std::make_unique<RacerSample[]>(workers);
      restart_after_ = recovery->restart_after;
      restart_timer_ = recovery->timer;
    }
  } else if (recovery) {
    recovery->learned.resize(workers);  // a lane without learned times: unknown
    // A state kept by recovery.cache if one fits, else a new one.
    if (recovery->cache) tracked_ = recovery->cache->take(workers, batch);
    if (tracked_) {
      tracked_->reset(std::move(*recovery));
    } else {
      tracked_ = std::make_unique<Tracked>(std::move(*recovery), workers, batch);
    }
    for (std::size_t i = 0; i < workers; ++i) {
      tracked_->lane[i].front = logs_[i].first;
      tracked_->lane[i].back = logs_[i].first + allocation_[i];
      tracked_->lane[i].races = plan.is_racer(i);
    }
    // An indexed race's pool: [sum of quotas, B).
    tracked_->pool_next = allocation_.total();
    for (std::size_t i : targets_) tracked_->lane[i].helps = true;
  }
}

Batch::~Batch() {
  if (tracked_ && tracked_->recovery.cache) {
    const std::shared_ptr<TrackedStateCache> cache = std::move(tracked_->recovery.cache);
    cache->keep(std::move(tracked_));
  }
}

void Batch::Tracked::reset(Recovery recovery_in) {
  rule = BackupRule(recovery_in.backups);  // first: it may throw
  recovery = std::move(recovery_in);
  for (LaneState& state : lane) {
    std::stop_source stop = std::move(state.stop);
    std::destroy_at(&state);
    std::construct_at(&state);
    if (!stop.stop_requested()) state.stop = std::move(stop);
  }
  // Flags and task states of earlier generations are stale as they stand (see generation).
  static_assert(std::is_trivially_copyable_v<TaskState>);
  if (++generation == 0) {
    generation = 1;
    std::memset(static_cast<void*>(task.data()), 0, task.size() * sizeof(TaskState));
    std::memset(claims.get(), 0, task_capacity);
    std::memset(ended.get(), 0, task_capacity);
    std::memset(copied.get(), 0, task_capacity);
  }
  view_task.assign(view_task.size(), kIdle);
  pool_next = 0;
  takeovers = backup_copies = retried = restarts = 0;
  released = false;
}

void Batch::Tracked::forget_batch() noexcept {
  recovery.owner.reset();
  recovery.caller = nullptr;
  recovery.timer = nullptr;
  timer.reset();
  summon_lost = nullptr;
  retry.clear();
  discarded.clear();
  censored.clear();
}

std::unique_ptr<Batch::Tracked> TrackedStateCache::take(std::size_t lanes,
                                                        std::size_t tasks) noexcept {
  std::lock_guard lock(mutex_);
  for (auto& state : kept_) {
    if (state->lane.size() == lanes && state->task_capacity >= tasks) {
      std::unique_ptr<Batch::Tracked> taken = std::move(state);
      state = std::move(kept_.back());
      kept_.pop_back();
      return taken;
    }
  }
  return nullptr;
}

void TrackedStateCache::keep(std::unique_ptr<Batch::Tracked> state) noexcept {
  if (state->task_capacity > kMostTasks) return;
  state->forget_batch();
  std::lock_guard lock(mutex_);
  if (kept_.size() < kept_.capacity()) kept_.push_back(std::move(state));
}

void Batch::submit(LaneSet& lanes) {
  if (!fungible_ && mode_ != Dispatch::allocated && !tracked_) {
    throw Error("an indexed race runs on the lanes tracked only: it needs a Recovery");
  }
  lanes_ = &lanes;
  // Read now: once a chunk is queued, a task may destroy the lanes.
  caller_lane_ = lanes.caller_lane();
  // The caller lane, the highest index, is never queued on (nor given a backlog: its caller
  // runs its chunk at once, inline).
  const auto queued = std::span(targets_).first(targets_.size() - (has_caller_role() ? 1 : 0));
  // Counted before the chunks are queued, so that a worker never settles more than was added.
  if (has_shares()) {
    for (std::size_t i : queued) lanes.add_backlog(i, allocation_[i]);
  }
  try {
    // Each queue entry holds a reference, so the batch outlives its last queued chunk.
    lanes.submit(shared_from_this(), queued);
  } catch (...) {
    if (has_shares()) {
      for (std::size_t i : queued) lanes.settle_backlog(i, allocation_[i]);
    }
    throw;
  }
}

bool Batch::has_caller_role() const noexcept {
  return !targets_.empty() && targets_.back() == caller_lane_;
}

void Batch::settle_share(Lane& worker) noexcept {
  const std::size_t i = worker.index();
  const std::size_t rest = allocation_[i] - logs_[i].settled;
  if (rest > 0) worker.settle_backlog(rest);
  logs_[i].settled = allocation_[i];
}

void Batch::cancel() noexcept {
  if (!results_complete()) decide(Outcome::cancelled, nullptr);
}

Batch::Outcome Batch::outcome() const noexcept { return outcome_.load(std::memory_order_acquire); }

std::exception_ptr Batch::take_error() noexcept {
  std::lock_guard lock(outcome_mutex_);
  return std::exchange(error_, nullptr);
}

void Batch::run(Lane& worker) noexcept {
  const bool entered = try_enter();  // else closed: the task body may be gone already
  if (entered) {
    TaskContext ctx(0, worker.index(), stop_.get_token());
    try {
      if (tracked_) {
        run_tracked(worker);
      } else if (timing_ == Timing::chunk_means) {  // allocated mode only
        run_allocated_timing_chunk(worker, ctx);
      } else if (mode_ == Dispatch::allocated) {
        run_allocated(worker, ctx);
      } else {
        // An untracked race is a fungible one (greedy, alone or beside quotas).
        run_greedy(worker, ctx);
      }
    } catch (...) {
      decide(Outcome::failed, std::current_exception());
    }
  } else if (tracked_) {
    std::lock_guard lock(tracked_->mutex);
    tracked_->lane[worker.index()].summoned = false;
  }
  if (has_shares()) settle_share(worker);
  if (entered) leave();
}

bool Batch::enter_for_task(std::size_t& task) noexcept {
  if (unstarted() == 0 || !try_enter()) return false;
  task = next_task_.fetch_add(1, std::memory_order_relaxed);
  // Closed while this worker is inside: the batch completes when the last one leaves.
  if (task + 1 == batch_) close();
  return true;
}

void Batch::run_entered_task(Lane& worker, std::size_t task) noexcept {
  const std::size_t i = worker.index();
  TaskContext ctx(task, i, stop_.get_token());
  try {
    auto since = clock_.now();
    const auto started = since;
    const auto duration = run_task(worker, ctx, task, since);
    body_.accept(i, task);
    record(i, {task, duration, task, started});
  } catch (...) {
    decide(Outcome::failed, std::current_exception());
  }
  leave();
}

void Batch::abandon(std::size_t worker, const std::exception_ptr& reason) noexcept {
  if (tracked_) {
    // A lane summoned to help (its share ran already, or it had none) is not needed, unless
    // a retry now waits for no lane at all: nothing else would decide the batch.
    std::unique_lock lock(tracked_->mutex);
    Tracked::LaneState& lane = tracked_->lane[worker];
    if (lane.summoned) {
      lane.summoned = false;
      if (!tracked_->summon_lost) tracked_->summon_lost = reason;
      fail_if_stranded(lock);
      return;
    }
  }
  // Never run here: the whole share leaves the backlog (the pool is shutting down, alive).
  if (has_shares()) lanes_->settle_backlog(worker, allocation_[worker]);
  // A share runs on its own worker or not at all. A racer of a pure race is one of several:
  // the batch is lost only if no worker reached it.
  if (has_shares() || abandoned_.fetch_add(1, std::memory_order_acq_rel) + 1 == targets_.size()) {
    decide(Outcome::failed, reason);
  }
}

void Batch::interrupt(const std::exception_ptr& reason) noexcept {
  if (!results_complete()) decide(Outcome::failed, reason);
}

std::chrono::nanoseconds Batch::run_task(Lane& worker, TaskContext& ctx, std::size_t task,
                                         TaskClock::Ticks& since) {
  ctx.task_ = task;
  worker.run_slowed(body_, ctx, round_);
  const auto end = clock_.now();
  return elapsed(std::exchange(since, end), end);
}

void Batch::record(std::size_t worker, const RanTask& ran) {
  try {
    logs_[worker].ran.push_back(ran);
  } catch (const std::bad_alloc&) {
    throw Error("out of memory recording task " + std::to_string(ran.task) + " of a batch of " +
                std::to_string(batch_) + " tasks on worker " + std::to_string(worker));
  }
}

void Batch::run_allocated(Lane& worker, TaskContext& ctx) {
  const std::size_t i = worker.index();
  const std::size_t first = logs_[i].first;
  const std::size_t end = first + allocation_[i];
  WorkerLog& log = logs_[i];
  auto since = clock_.now();
  // The tasks run back to back: each starts where the previous ended, one addition per task
  // (each duration is rounded down to the nanosecond, so a start may be early by as many
  // nanoseconds as tasks ran before it in the share).
  std::chrono::nanoseconds start = elapsed(origin_ticks_, since);
  ShiftedMoments moments;
  for (std::size_t task = first; task < end; ++task) {
    // Only a decided batch requests stop, and its results are not wanted any more.
    if (ctx.stop_requested()) return;
    const auto duration = run_task(worker, ctx, task, since);
    worker.settle_backlog(1);
    ++log.settled;
    body_.accept(i, task);
    log.busy += duration;
    moments.add(duration);
    if (keep_records_) {
      write_record(task, i, duration, start);
      start += duration;
    }
  }
  log.summary = moments.stats();
  if (shares_left_.fetch_sub(1, std::memory_order_acq_rel) == 1) close();
}

void Batch::run_allocated_timing_chunk(Lane& worker, TaskContext& ctx) {
  const std::size_t i = worker.index();
  const std::size_t first = logs_[i].first;
  const std::size_t tasks = allocation_[i];
  WorkerLog& log = logs_[i];
  const auto start = clock_.now();
  if (worker.slowdown().kind() == Slowdown::Kind::none) {
    // Runs of kSettleEvery tasks in one call each: the backlog still follows the progress.
    for (std::size_t task = first; task < first + tasks;) {
      const std::size_t end = std::min(first + tasks, task + kSettleEvery);
      const std::size_t ran = body_.execute_range(ctx, task, end) - task;
      worker.settle_backlog(ran);
      log.settled += ran;
      if (task + ran < end) return;  // stop requested
      task = end;
    }
  } else {
    for (std::size_t task = first; task < first + tasks; ++task) {
      if (ctx.stop_requested()) return;
      ctx.task_ = task;
      worker.run_slowed(body_, ctx, round_);
      worker.settle_backlog(1);
      ++log.settled;
      body_.accept(i, task);
    }
  }
  log.busy = elapsed(start, clock_.now());
  // Every task is recorded with the chunk's mean; the summary has the chunk's count and mean
  // and no spread (the tasks' own times were not measured).
  const auto mean = log.busy / static_cast<std::chrono::nanoseconds::rep>(tasks);
  const auto chunk_start = elapsed(origin_ticks_, start);
  for (std::size_t task = first; keep_records_ && task < first + tasks; ++task) {
    write_record(task, i, mean,
                 chunk_start + mean * static_cast<std::chrono::nanoseconds::rep>(task - first));
  }
  log.summary = WorkerStats::from_moments(
      tasks, std::chrono::duration<double>(log.busy).count() / static_cast<double>(tasks), 0.0);
  if (shares_left_.fetch_sub(1, std::memory_order_acq_rel) == 1) close();
}

void Batch::run_greedy(Lane& worker, TaskContext& ctx) {
  const std::size_t i = worker.index();
  // With restart budgets, each sample has a stop source of its own, which the timer stops at
  // the racer's budget; the racer then starts a fresh sample under the same number.
  RacerSample* const racer = racers_ ? &racers_[i] : nullptr;
  // Its samples' numbers: its quota's own first (a mixed plan), then the race's counter if it
  // races (every lane of a pure race does).
  std::size_t own = logs_[i].first;
  const std::size_t own_end = own + allocation_[i];
  const bool races = !has_shares() || logs_[i].races;
  std::size_t task = 0;
  bool again = false;   // the last sample restarted: its fresh one keeps its number
  ShiftedMoments kept;  // the times of its results that were kept
  auto since = clock_.now();
  // Relaxed is enough: the results themselves are published when the workers leave.
  while (accepted_.load(std::memory_order_relaxed) < batch_ && !stop_.stop_requested()) {
    if (!std::exchange(again, false)) {
      if (own < own_end) {
        task = own++;
      } else if (races) {
        task = next_task_.fetch_add(1, std::memory_order_relaxed);
      } else {
        break;
      }
    }
    // The batch's stop (its B-th result, or its decision) stops a sample's own source too.
    std::optional<std::stop_callback<ForwardStop>> forward;
    if (racer != nullptr) {
      start_sample(i, ctx);
      forward.emplace(stop_.get_token(), ForwardStop{racer->stop});
    }
    const auto started = since;
    std::chrono::nanoseconds duration{0};
    std::exception_ptr error;
    try {
      duration = run_task(worker, ctx, task, since);
    } catch (...) {
      error = std::current_exception();
      since = clock_.now();  // its end, where the next sample's time starts
      duration = elapsed(started, since);
    }
    // Every sample started ends here, its timer disarmed: nothing above escapes the loop.
    const bool restarted = racer != nullptr && end_sample(i);
    // A result claims the next slot; past B it is surplus, discarded.
    std::size_t slot = restarted ? kRestarted : kDiscarded;
    if (!restarted && !error) {
      const std::size_t claimed = accepted_.fetch_add(1, std::memory_order_relaxed);
      if (claimed < batch_) {
        body_.accept(i, claimed);
        slot = claimed;
      }
    }
    record(i, {task, duration, slot, started});
    if (restarted) {
      // Stopped at its budget: whatever it ended with is discarded, and a fresh sample starts.
      restarts_.fetch_add(1, std::memory_order_relaxed);
      again = true;
    } else if (error) {
      // A task ending once B results are in is surplus, whatever it ends with (often an
      // exception to honour its stop request): its exception is discarded with it. Before
      // that, it fails the batch, as a task of any mode does, unless retries are left: a new
      // task then replaces it. It claims no result slot, so every claimed slot is filled.
      if (accepted_.load(std::memory_order_relaxed) < batch_ &&
          failures_.fetch_add(1, std::memory_order_relaxed) >= failures_allowed_) {
        std::rethrow_exception(error);
      }
    } else if (slot < batch_) {
      kept.add(duration);
      // The B-th result is claimed: whatever still runs is surplus. The outcome is settled
      // when the workers inside have left (their accept() may still fail).
      if (slot + 1 == batch_) {
        last_result_ = since;
        stop_.request_stop();
        close();
      }
    }
  }
  if (timing_ == Timing::summaries) logs_[i].summary = kept.stats();
}

void Batch::start_sample(std::size_t lane, TaskContext& ctx) {
  RacerSample& me = racers_[lane];
  std::lock_guard lock(me.mutex);
  // A stopped sample's source stays stopped: the next sample gets a fresh one.
  if (!me.stop.stop_possible() || me.stop.stop_requested()) me.stop = std::stop_source();
  me.restarting = false;
  const std::uint64_t sample = ++me.sample;  // odd: running
  ctx.stop_ = me.stop.get_token();
  const double budget = backed_off_budget(restart_after_[lane], me.restarted_in_row);
  const auto when = saturating_after(DeadlineTimer::Clock::now(), budget);
  if (when == DeadlineTimer::Clock::time_point::max()) return;
  try {
    me.timer = restart_timer_->schedule(when, [weak = weak_from_this(), lane, sample] {
      if (const auto self = weak.lock()) self->restart_sample(lane, sample);
    });
  } catch (...) {
    // No timer thread or no memory: this sample runs to its end.
  }
}

bool Batch::end_sample(std::size_t lane) noexcept {
  RacerSample& racer = racers_[lane];
  std::lock_guard lock(racer.mutex);
  ++racer.sample;  // even: none runs, and the timer's call for this one does nothing
  if (racer.timer) restart_timer_->cancel(*std::exchange(racer.timer, std::nullopt));
  racer.restarted_in_row = racer.restarting ? racer.restarted_in_row + 1 : 0;
  return racer.restarting;
}

void Batch::restart_sample(std::size_t lane, std::uint64_t sample) noexcept {
  RacerSample& racer = racers_[lane];
  std::lock_guard lock(racer.mutex);
  if (racer.sample != sample) return;  // it ended, or a later one runs
  racer.timer.reset();                 // fired
  racer.restarting = true;
  racer.stop.request_stop();
}

bool Batch::results_complete() const noexcept {
  if (fungible_) return accepted_.load(std::memory_order_acquire) >= batch_;
  if (tracked_) return all_results_in();
  // An untracked pull batch's tasks handed out may still run: only completion tells.
  return mode_ == Dispatch::allocated && shares_left_.load(std::memory_order_acquire) == 0;
}

bool Batch::decide(Outcome outcome, std::exception_ptr error) noexcept {
  {
    std::lock_guard lock(outcome_mutex_);
    Outcome pending = Outcome::pending;
    if (!outcome_.compare_exchange_strong(pending, outcome)) return false;
    error_ = std::move(error);
  }
  stop_.request_stop();
  if (tracked_) {
    // Each running copy has a stop source of its own (a lane between copies replaces a
    // stopped one before its next, which a decided batch does not start).
    std::lock_guard lock(tracked_->mutex);
    for (Tracked::LaneState& lane : tracked_->lane) lane.stop.request_stop();
  }
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
  const std::uint64_t before = state_.fetch_or(kClosed, std::memory_order_acq_rel);
  // A batch that owns its task completes when it closes: late copies finish on their own.
  const bool detached = tracked_ && tracked_->recovery.owner != nullptr;
  if (before == 0 || (detached && (before & kClosed) == 0)) complete();
}

void Batch::complete() noexcept {
  if (completed_.exchange(true, std::memory_order_acq_rel)) return;  // detached, reached again
  if (tracked_) release();
  Outcome pending = Outcome::pending;
  const bool succeeded = outcome_.compare_exchange_strong(pending, Outcome::succeeded);
  // Only a batch with every result in has all its lanes' sums final (a detached one may
  // still have copies running: they lost, and add nothing).
  if (succeeded && tracked_ && timing_ == Timing::summaries) summarise_tracked();
  on_complete();
}

void Batch::collect(RoundReport& report, std::vector<std::size_t>& slot_order) {
  const std::size_t workers = logs_.size();
  report.dispatch = mode_;
  report.start = origin_;
  report.busy.assign(workers, std::chrono::nanoseconds{0});
  slot_order.clear();
  if (mode_ == Dispatch::allocated || tracked_) {
    // Every share ran to its end (tracked: every index has its accepted copy): the records
    // are all written.
    report.tasks = std::move(records_);
    for (std::size_t i = 0; i < workers; ++i) report.busy[i] = logs_[i].busy;
    if (mode_ == Dispatch::allocated) {
      // Untracked, every chunk ran: nothing reads the quotas again.
      report.allocation = tracked_ ? allocation_ : std::move(allocation_);
    } else {
      std::vector<std::size_t> accepted(workers, 0);
      for (std::size_t i = 0; i < workers; ++i) {
        accepted[i] = tracked_->lane[i].wins.load(std::memory_order_relaxed);
      }
      report.allocation = Allocation(std::move(accepted));
    }
    if (tracked_) {
      if (keep_records_) {
        report.tasks.insert(report.tasks.end(), tracked_->discarded.begin(),
                            tracked_->discarded.end());
      }
      report.takeovers = tracked_->takeovers;
      report.backup_copies = tracked_->backup_copies;
      report.retries = tracked_->retried;
      report.restarts = tracked_->restarts;
    }
    return;
  }

  // Every number handed out was run and logged: the records are placed by number, then start,
  // each number's place counted first. A number's repeats (a restarted sample's fresh one
  // keeps it) are on one lane, in the order they ran; numbers are left out where the B-th
  // result cut quotas short.
  std::vector<std::size_t> place(next_task_.load(std::memory_order_relaxed) + 1, 0);
  for (const auto& log : logs_) {
    for (const RanTask& r : log.ran) ++place[r.task + 1];
  }
  std::partial_sum(place.begin(), place.end(), place.begin());
  report.tasks.resize(place.back());
  std::vector<std::size_t> accepted(workers, 0);
  std::vector<std::size_t> slot_by_number(fungible_ ? place.back() : 0);
  for (std::size_t i = 0; i < workers; ++i) {
    for (const RanTask& r : logs_[i].ran) {
      const std::size_t k = place[r.task]++;
      const bool kept = r.slot < kRestarted;
      report.tasks[k] = TaskRecord{r.task, i, r.duration, kept, elapsed(origin_ticks_, r.start)};
      report.busy[i] += r.duration;
      accepted[i] += kept ? 1 : 0;
      if (!fungible_) continue;
      slot_by_number[k] = r.slot;
      if (r.slot == kRestarted) {
        surplus_.push_back({i, std::chrono::duration<double>(r.duration).count()});
      } else if (r.slot == kDiscarded) {
        // A copy that started before the B-th result and ended after it was running then: it
        // ran at least until then.
        const auto until = elapsed(r.start, last_result_);
        if (until.count() > 0 && until <= r.duration) {
          surplus_.push_back({i, std::chrono::duration<double>(until).count()});
        }
      }
    }
  }
  report.allocation = Allocation(std::move(accepted));
  if (fungible_) {
    report.retries = std::min(failures_.load(std::memory_order_relaxed), failures_allowed_);
    report.restarts = restarts_.load(std::memory_order_relaxed);
    slot_order.reserve(batch_);
    for (std::size_t slot : slot_by_number) {
      if (slot < kRestarted) slot_order.push_back(slot);
    }
  }
}

}  // namespace ata::runtime::detail

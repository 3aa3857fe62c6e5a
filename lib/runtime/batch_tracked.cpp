// Tracked allocated batches (Recovery): backup copies and take-overs by ata::BackupRule, the
// simulator's rule; retries of failing tasks; restart budgets; quarantine marks for stuck
// lanes.
//
// A lane runs its share from the front, a chunk at a time (as many tasks as its learned mean
// fits in kChunkSpan, one while unknown); once the share is done and the batch still waits,
// it asks the rule (as the one available worker) for a take-over (the back of another share)
// or a backup copy of an overdue running one, and runs it; when there is nothing to do it
// leaves. A timer armed for the moment the next running copy becomes overdue for an idle lane
// sends that lane back (the batch is queued on it again: its queue entry is free once it ran).
//
// The mutex is taken once per chunk, not per task. Within a chunk a lane publishes the copy it
// runs (its task and start, atomics the rule's view reads) and claims each result: the first
// copy to end without an exception claims it (exactly one per index). A chunk's copy and a
// backup copy about to start shake hands (Tracked::ended, Tracked::copied, through
// AsymmetricFence): a chunk's copy that sees no backup claims with a plain store, and the
// backup does not start; otherwise both claim with a fetch_or, and the winner takes the mutex
// to stop the other. A copy that lost, threw or was stopped to restart takes the mutex too. A copy ending after the claim is discarded, its time counted as
// worker time and reported as censored. A failing attempt is queued for a retry on another
// lane while attempts remain, else it fails the batch. With restart budgets
// (Recovery::restart_after), chunks hold one task and every copy starts and ends under the
// mutex: the same timer stops a copy that has run its lane's budget; when it returns
// (whatever with) it is discarded and censored, and its lane starts the task afresh before
// anything else, unless another copy gave the result meanwhile. The batch is complete when
// the lanes' claim counts add up to B (all_results_in()).

#include <algorithm>
#include <chrono>
#include <limits>
#include <ranges>
#include <utility>

#include "runtime/batch.hpp"

#include "ata/runtime/detail/batch_operation.hpp"
#include "runtime/durations.hpp"

namespace ata::runtime::detail {

namespace {
constexpr std::size_t kNoLane = std::numeric_limits<std::size_t>::max();
constexpr std::size_t kNoTask = std::numeric_limits<std::size_t>::max();
}  // namespace

const std::vector<Censored>& Batch::censored() const noexcept {
  return tracked_ ? tracked_->censored : surplus_;
}

bool Batch::all_results_in(std::size_t claimer) const noexcept {
  // Each lane publishes its count after the effects of its claims (release). A claimer about
  // to check re-publishes its own with a seq_cst read-modify-write, and reads the others'
  // seq_cst: of lanes checking at once after their last claims, the one whose write comes
  // last sees every count.
  if (claimer != kNoLane) tracked_->lane[claimer].wins.fetch_add(0, std::memory_order_seq_cst);
  std::size_t wins = 0;
  for (const Tracked::LaneState& lane : tracked_->lane) {
    wins += lane.wins.load(std::memory_order_seq_cst);
  }
  return wins >= batch_;
}

void Batch::run_tracked(Lane& worker) {
  const std::size_t i = worker.index();
  Tracked& t = *tracked_;
  std::unique_lock lock(t.mutex);
  Tracked::LaneState& me = t.lane[i];
  me.inside = true;
  me.summoned = false;
  me.entered = true;
  std::exception_ptr failure;
  try {
    while (!t.released && !stop_.stop_requested()) {
      const Pick pick = pick_task(i);
      if (pick.source == Source::none) {
        // Out of work. The lane whose claim was the last one closes the batch here (a claim
        // from a chunk does not check: only its lane's last one can be the batch's last).
        if (all_results_in(i)) {
          lock.unlock();
          close();
          lock.lock();
        }
        break;
      }
      if (run_chunk(worker, lock, pick)) break;
    }
  } catch (...) {
    failure = std::current_exception();
  }
  if (failure) {
    // accept() or a fresh stop source failed: the batch fails with it (decided outside the
    // handler, so that this thread holds no reference once the caller has the exception).
    if (lock.owns_lock()) lock.unlock();
    decide(Outcome::failed, std::move(failure));
    lock.lock();
  }
  me.inside = false;
  arm_timer();
  fail_if_stranded(lock);
}

std::size_t Batch::chunk_length(std::size_t lane, std::size_t available,
                                std::size_t most) const noexcept {
  // A restart budget is armed as each copy starts, under the mutex.
  if (!tracked_->recovery.restart_after.empty()) return 1;
  const double mean = mean_of(lane);
  if (!(mean > 0.0)) return 1;
  const double fit = kChunkSpan / mean;
  const std::size_t length = fit >= static_cast<double>(most)
                                 ? most
                                 : std::max<std::size_t>(1, static_cast<std::size_t>(fit));
  return std::min(length, available);
}

bool Batch::run_chunk(Lane& worker, std::unique_lock<BriefLock>& lock, const Pick& pick) {
  const std::size_t i = worker.index();
  Tracked& t = *tracked_;
  Tracked::LaneState& me = t.lane[i];
  const bool chunk = pick.source == Source::own || pick.source == Source::pool ||
                     pick.source == Source::take_over;
  // A stopped copy's source stays stopped: the next copy gets a fresh one.
  if (!me.stop.stop_possible() || me.stop.stop_requested()) me.stop = std::stop_source();
  if (!chunk) ++t.state_of(pick.task).copies;
  me.restarting = false;
  me.in_chunk = chunk;
  const double mean = mean_of(i);
  // A lane counts as stuck no sooner than a copy earns a backup (min_overdue, 1 ms by
  // default on threads): tasks of microseconds pass any multiple of their mean whenever the
  // lane loses its core for a moment, and the timer armed for that moment would wake every
  // few batches, taking a core from the lanes.
  const double least_stuck = t.rule.options().min_overdue.value_or(0.0);
  me.stuck_after = mean > 0.0 ? std::max(t.recovery.stuck_after * mean, least_stuck)
                              : std::numeric_limits<double>::infinity();
  TaskClock::Ticks since = clock_.now();
  me.current_start.store(since, std::memory_order_relaxed);
  me.current.store(pick.task, std::memory_order_release);
  // One stuck mark for the whole chunk, its tasks' allowances added up: a chunk holds tasks
  // of microseconds, whose lane is stuck only if the chunk overruns as a whole. Saturated: a
  // stuck_after of +inf (or one too long for the clock) is never reached.
  const auto chunk_wall = Lane::Clock::now();
  const double chunk_allowance = std::max(
      t.recovery.stuck_after * mean * static_cast<double>(pick.end - pick.task), least_stuck);
  worker.mark_task(chunk_wall, mean > 0.0 ? saturating_after(chunk_wall, chunk_allowance)
                                          : Lane::Clock::time_point::max());
  arm_timer(i);
  TaskContext ctx(pick.task, i, me.stop.get_token());
  // Without restart budgets, a chunk's copy that wins, the usual case, needs no mutex.
  const bool end_unlocked = chunk && t.recovery.restart_after.empty();
  const AsymmetricFence& fence = AsymmetricFence::instance();
  // The running task's start in the batch's time: each starts where the previous ended, one
  // addition per task (as in an untracked share).
  std::chrono::nanoseconds record_start = elapsed(origin_ticks_, since);
  const std::chrono::nanoseconds chunk_start = record_start;
  std::size_t give_back = kNoTask;  // the first task handed back to the share, if any
  std::size_t own_ran = 0;
  std::int64_t won_ns = 0;
  std::size_t won = 0;
  bool lane_done = false;
  std::exception_ptr failure;
  lock.unlock();
  try {
    for (std::size_t task = pick.task; task < pick.end; ++task) {
      if (task != pick.task) {
        // Only a decided batch requests stop, and its results are not wanted any more.
        if (stop_.stop_requested()) break;
        if (pick.source == Source::own) {
          if (record_start - chunk_start > kChunkOverrun) {
            give_back = task;
            break;
          }
          // The caller lane may have taken the rest over (pick_task): settled under the mutex.
          if (task >= fence.light_store_load(me.started, task, me.limit)) {
            lock.lock();
            if (task >= me.limit.load(std::memory_order_relaxed)) break;
            lock.unlock();
          }
        }
        me.current_start.store(since, std::memory_order_relaxed);
        me.current.store(task, std::memory_order_release);
      }
      ctx.task_ = task;
      const TaskClock::Ticks started = since;
      std::exception_ptr error;
      try {
        worker.run_slowed(body_, ctx, round_);
      } catch (...) {
        error = std::current_exception();
      }
      const TaskClock::Ticks end = clock_.now();
      const auto duration = elapsed(since, end);
      since = end;
      const std::chrono::nanoseconds recorded_start = record_start;
      record_start += duration;
      me.current.store(Tracked::kIdle, std::memory_order_release);
      if (pick.source == Source::own) ++own_ran;
      if (end_unlocked && !error) {
        // No backup copy started: none can start now, and the claim is this copy's alone.
        // Else the first copy to claim wins, and stops the others.
        const bool copied =
            fence.light_store_load(t.ended_flag(task), t.copied_flag(task), t.generation);
        if (!copied) t.claim(task).store(t.generation, std::memory_order_release);
        if (!copied ||
            t.claim(task).exchange(t.generation, std::memory_order_acq_rel) != t.generation) {
          record_win(i, task, recorded_start, duration);
          won_ns += duration.count();
          ++won;
          if (copied) {
            lock.lock();
            stop_other_copies(task, i);
            lock.unlock();
          }
          continue;
        }
      }
      lock.lock();
      lane_done = end_copy(lock, i, task, started, duration, std::move(error), chunk);
      if (lane_done) break;
      // end_copy() records from the clock: the next start follows from it, never before its end.
      record_start = elapsed(origin_ticks_, since);
      // This copy's source may have been stopped (it lost): the chunk's next task needs a
      // fresh one.
      if (me.stop.stop_requested()) {
        me.stop = std::stop_source();
        ctx.stop_ = me.stop.get_token();
      }
      lock.unlock();
    }
  } catch (...) {
    failure = std::current_exception();  // thrown once its copy ended: `current` is idle
  }
  if (!lock.owns_lock()) lock.lock();
  worker.clear_task();
  me.in_chunk = false;
  if (failure) std::rethrow_exception(failure);
  me.limit.store(0, std::memory_order_relaxed);
  // The share's unstarted tasks start where the chunk ended: no one takes below its front
  // (nor at or past its back, which the caller lane may have lowered into the chunk).
  if (give_back != kNoTask) me.front = std::min(give_back, me.back);
  me.finished_ns += won_ns;
  me.finished += won;
  if (own_ran > 0) {
    worker.settle_backlog(own_ran);
    logs_[i].settled += own_ran;
  }
  return lane_done;
}

bool Batch::end_copy(std::unique_lock<BriefLock>& lock, std::size_t lane, std::size_t task,
                     TaskClock::Ticks start, std::chrono::nanoseconds duration,
                     std::exception_ptr error, bool in_chunk) {
  Tracked& t = *tracked_;
  Tracked::LaneState& me = t.lane[lane];
  Tracked::TaskState& state = t.state_of(task);
  if (!in_chunk) --state.copies;
  const std::size_t restarted_in_row = std::exchange(me.restarted_in_row, 0);
  if (t.released) return true;  // the caller has its results: nothing more is recorded
  if (t.done(task)) {
    discard_copy(lane, task, start, duration, true);  // lost to another copy: stopped, or second
    return false;
  }
  if (me.restarting) {
    // Stopped at its restart budget: whatever it ended with (its result, or the exception
    // that honoured the stop) is discarded, its time censored, and the task starts afresh.
    discard_copy(lane, task, start, duration, true);
    ++t.restarts;
    me.restart = true;
    me.restart_task = task;
    me.restarted_in_row = restarted_in_row + 1;
    return false;
  }
  if (error) {
    if (stop_.stop_requested()) return true;
    discard_copy(lane, task, start, duration, false);
    const bool other_copy_runs =
        state.copies > 0 ||
        std::any_of(t.lane.begin(), t.lane.end(), [&](const Tracked::LaneState& other) {
          return other.in_chunk && other.current.load(std::memory_order_acquire) == task;
        });
    if (other_copy_runs) {
      state.failing = true;  // the copy still running gives the result or the error
      return false;
    }
    if (state.failures < t.recovery.retries) {
      ++state.failures;
      state.failed_on = static_cast<std::uint32_t>(lane);
      t.retry.push_back(task);
      ++t.retried;
      const std::size_t helper = retry_lane(lane);
      if (helper != kNoLane) {
        t.lane[helper].summoned = true;
        lock.unlock();
        summon(helper);
        lock.lock();
      }
      return false;
    }
    lock.unlock();
    decide(Outcome::failed, std::move(error));
    lock.lock();
    return true;
  }
  // The first copy to end claims the result (a chunk's copy may claim without the mutex);
  // the others are stopped.
  if (t.claim(task).exchange(t.generation, std::memory_order_acq_rel) == t.generation) {
    discard_copy(lane, task, start, duration, true);
    return false;
  }
  me.finished_ns += duration.count();
  ++me.finished;
  stop_other_copies(task, lane);
  lock.unlock();
  record_win(lane, task, elapsed(origin_ticks_, start), duration);
  const bool last = all_results_in(lane);
  if (last) close();  // nothing more is wanted; copies still running are surplus
  lock.lock();
  return last;
}

void Batch::record_win(std::size_t lane, std::size_t task, std::chrono::nanoseconds start,
                       std::chrono::nanoseconds duration) {
  Tracked::LaneState& me = tracked_->lane[lane];
  if (keep_records_) write_record(task, lane, duration, start);
  logs_[lane].busy += duration;
  me.won.add(duration);
  body_.accept(lane, task);
  // Single writer: a load and a store, no read-modify-write.
  me.wins.store(me.wins.load(std::memory_order_relaxed) + 1, std::memory_order_release);
}

void Batch::discard_copy(std::size_t lane, std::size_t task, TaskClock::Ticks start,
                         std::chrono::nanoseconds ran, bool censored) {
  logs_[lane].busy += ran;  // first: it counts even if the record cannot be kept
  tracked_->discarded.push_back({task, lane, ran, false, elapsed(origin_ticks_, start)});
  if (censored) tracked_->censored.push_back({lane, std::chrono::duration<double>(ran).count()});
}

void Batch::stop_other_copies(std::size_t task, std::size_t winner) noexcept {
  Tracked& t = *tracked_;
  for (std::size_t j = 0; j < t.lane.size(); ++j) {
    if (j != winner && t.lane[j].current.load(std::memory_order_acquire) == task) {
      t.lane[j].stop.request_stop();
    }
  }
}

void Batch::summarise_tracked() noexcept {
  for (std::size_t i = 0; i < logs_.size(); ++i) logs_[i].summary = tracked_->lane[i].won.stats();
}

Batch::Pick Batch::pick_task(std::size_t lane) {
  Tracked& t = *tracked_;
  Tracked::LaneState& me = t.lane[lane];
  const auto one = [](Source source, std::size_t task) { return Pick{source, task, task + 1}; };
  // A chunk from the back of lane `victim`'s share, at most half of what is left there: tasks
  // of microseconds move several at a time, longer ones one by one, as in the simulator.
  const auto take_over = [&](std::size_t victim) {
    Tracked::LaneState& from = t.lane[victim];
    const std::size_t length =
        chunk_length(lane, std::max<std::size_t>(1, (from.back - from.front) / 2));
    from.back -= length;
    t.takeovers += length;
    return Pick{Source::take_over, from.back, from.back + length};
  };
  // 0. The task whose copy it stopped at its restart budget, unless another copy gave it.
  if (me.restart) {
    me.restart = false;
    if (!t.done(me.restart_task)) return one(Source::restart, me.restart_task);
  }
  // 1. A retry this lane did not fail itself (with one lane, there is no other).
  for (auto it = t.retry.begin(); it != t.retry.end(); ++it) {
    if (t.state_of(*it).failed_on != lane || t.lane.size() == 1) {
      const std::size_t task = *it;
      t.retry.erase(it);
      t.state_of(task).failing = false;  // a fresh attempt, which may earn a backup again
      return one(Source::retry, task);
    }
  }
  // 2. Its own share, from the front, a chunk at a time.
  if (me.front < me.back) {
    const std::size_t first = me.front;
    me.front += chunk_length(lane, me.back - me.front, kMaxOwnChunk);
    me.started.store(first, std::memory_order_relaxed);
    me.limit.store(me.front, std::memory_order_relaxed);
    return {Source::own, first, me.front};
  }
  // 2b. A racer: the race's next unstarted indices.
  if (me.races && t.pool_next < batch_) {
    const std::size_t first = t.pool_next;
    t.pool_next += chunk_length(lane, batch_ - t.pool_next);
    return {Source::pool, first, t.pool_next};
  }
  // 2c. The caller lane: a chunk from the back of the most unstarted tasks any lane has left,
  // whatever the backups. Its caller is on a core now, where that lane may not have reached
  // the batch yet (asleep, or busy with an earlier one), or may have lost its core mid-share.
  const auto unstarted = [](const Tracked::LaneState& state) { return state.back - state.front; };
  if (lane == caller_lane_) {
    const auto victim = std::ranges::max_element(t.lane, {}, unstarted);
    if (unstarted(*victim) > 0) return take_over(static_cast<std::size_t>(victim - t.lane.begin()));
    // With none left, the rest of a chunk whose lane has stalled in it (lost its core): all
    // of it after the task that lane started, which is its own.
    double wait = 0.0;
    if (const std::size_t stalled = stalled_chunk(wait); stalled != kNoLane) {
      Tracked::LaneState& from = t.lane[stalled];
      const std::size_t end = from.limit.load(std::memory_order_relaxed);
      const std::size_t first =
          1 + AsymmetricFence::instance().heavy_store_load(
                  from.limit, from.started.load(std::memory_order_relaxed) + 1, from.started);
      from.limit.store(std::min(first, end), std::memory_order_relaxed);
      if (first < end) {
        from.front = from.back = first;
        t.takeovers += end - first;
        return {Source::take_over, first, end};
      }
    }
  }
  // 3. Help, if it had a share or races (so that backups never undo the allocation's choice).
  if (!me.helps || !t.rule.options().enabled()) return {};
  // Until the overdue floor the rule can only take unstarted tasks over: with none left,
  // there is nothing to ask it (the view is a look at every lane's state).
  if (std::ranges::none_of(t.lane, unstarted) && DeadlineTimer::Clock::now() < overdue_floor()) {
    return {};
  }
  describe(lane);
  const BackupAction action = t.rule.next(t.view);
  switch (action.kind) {
    case BackupAction::Kind::take_over:
      return take_over(action.from);
    case BackupAction::Kind::backup: {
      // The copy the rule saw; if its task has ended since, there is nothing to copy.
      const std::size_t task = t.view_task[action.from];
      if (task == Tracked::kIdle || t.done(task) ||
          AsymmetricFence::instance().heavy_store_load(t.copied_flag(task), t.ended_flag(task),
                                                       t.generation)) {
        return {};
      }
      ++t.backup_copies;
      return one(Source::backup, task);
    }
    case BackupAction::Kind::none:
      break;
  }
  return {};
}

std::size_t Batch::stalled_chunk(double& wait) const noexcept {
  const TaskClock::Ticks now = clock_.now();
  std::size_t stalled = kNoLane;
  wait = std::numeric_limits<double>::infinity();
  for (std::size_t j = 0; j < tracked_->lane.size(); ++j) {
    const Tracked::LaneState& lane = tracked_->lane[j];
    if (lane.limit.load(std::memory_order_relaxed) <=
        lane.started.load(std::memory_order_relaxed) + 1) {
      continue;
    }
    const auto start = lane.current_start.load(std::memory_order_relaxed);
    const double ran = std::chrono::duration<double>(elapsed(start, now)).count();
    wait = std::min(wait, std::max(kChunkSpan - ran, 0.0));
    if (ran >= kChunkSpan) stalled = j;
  }
  return stalled;
}

void Batch::describe(std::size_t helper) noexcept {
  Tracked& t = *tracked_;
  const TaskClock::Ticks now = clock_.now();
  const auto wall_now = Lane::Clock::now();
  // The copy each lane runs, read once; copies from chunks are not in TaskState::copies, so
  // they are counted here.
  for (std::size_t j = 0; j < t.lane.size(); ++j) {
    const std::size_t task = t.lane[j].current.load(std::memory_order_acquire);
    t.view_task[j] = task;
    if (task != Tracked::kIdle && t.lane[j].in_chunk) ++t.state_of(task).in_chunks;
  }
  for (std::size_t j = 0; j < t.lane.size(); ++j) {
    const Tracked::LaneState& lane = t.lane[j];
    BackupWorker& view = t.view[j];
    const std::size_t task = t.view_task[j];
    view.mean = mean_of(j);
    view.unstarted = lane.back - lane.front;
    if (task == Tracked::kIdle) {
      // Between two tasks of a chunk a lane counts as running one that has just started, so
      // that the timer is armed for it.
      view.running = lane.in_chunk;
      view.elapsed = 0.0;
      view.copies = 1;
    } else {
      // A copy whose task has its result, or stopped to restart, is about to end: not worth
      // a backup. The start read after the task may be a later copy's: a shorter elapsed time.
      const Tracked::TaskState& state = t.state_of(task);
      view.running = !t.done(task) && !lane.restarting;
      const TaskClock::Ticks start = lane.current_start.load(std::memory_order_relaxed);
      view.elapsed = view.running ? std::chrono::duration<double>(elapsed(start, now)).count() : 0.0;
      view.copies = !view.running ? 0
                    : state.failing ? t.rule.options().max_copies
                                    : state.copies + state.in_chunks;
    }
    view.available = helper == kNoLane ? can_summon(j) : j == helper;
    view.stalled = lanes_->lane(j).stuck_for(wall_now) > 0.0;
  }
  for (const std::size_t task : t.view_task) {
    if (task != Tracked::kIdle) t.state_of(task).in_chunks = 0;
  }
}

double Batch::mean_of(std::size_t lane) const noexcept {
  const Tracked& t = *tracked_;
  const WorkerStats& learned = t.recovery.learned[lane];
  const std::size_t count = learned.count() + t.lane[lane].finished;
  if (count == 0) return 0.0;
  const double sum = learned.mean() * static_cast<double>(learned.count()) +
                     static_cast<double>(t.lane[lane].finished_ns) * 1e-9;
  return sum / static_cast<double>(count);
}

bool Batch::can_summon(std::size_t lane) const noexcept {
  // The caller lane only while its blocking caller waits for the batch (not in async_run()).
  if (lane >= tracked_->lane.size()) return false;  // kNoLane: a pool without a caller lane
  const Tracked::LaneState& state = tracked_->lane[lane];
  return state.helps && state.entered && !state.inside && !state.summoned &&
         (lane != caller_lane_ || tracked_->recovery.caller != nullptr);
}

void Batch::arm_timer(std::size_t starting) noexcept {
  Tracked& t = *tracked_;
  // A decided batch wants no more copies; its lanes may be gone (a task that destroyed them).
  if (t.released || stop_.stop_requested() || t.recovery.timer == nullptr) return;
  if (starting != kNoLane && t.timer) {
    // The copy starting now earns a backup no sooner than min_overdue, and reaches its restart
    // budget or its stuck deadline no sooner than those: the other lanes' deadlines are those
    // the armed timer was set for.
    double soonest = t.rule.options().min_overdue.value_or(0.0);
    if (!t.recovery.restart_after.empty()) {
      soonest = std::min(soonest, restart_budget(starting));
    }
    if (t.rule.options().take_overs()) soonest = std::min(soonest, t.lane[starting].stuck_after);
    if (can_summon(caller_lane_)) soonest = std::min(soonest, kChunkSpan);
    if (t.timer_at <= saturating_after(DeadlineTimer::Clock::now(), soonest)) return;
  }
  // The caller lane, out of work, looks again when a chunk in progress would have stalled.
  if (double wait = 0.0; can_summon(caller_lane_)) {
    (void)stalled_chunk(wait);
    set_timer(saturating_after(DeadlineTimer::Clock::now(), wait));
  }
  // A backup copy needs a lane to summon: while none is free, the timer is not armed for one
  // (a lane arms it as it leaves the batch).
  const bool helper = t.rule.options().enabled() &&
                      std::ranges::any_of(std::views::iota(std::size_t{0}, t.lane.size()),
                                          [&](std::size_t j) { return can_summon(j); });
  if (!helper && t.recovery.restart_after.empty()) return;
  // Until the overdue floor the timer is set for it without the rule's view (a look at every
  // lane's state, under the lock as each lane starts and leaves): most batches end sooner.
  if (t.recovery.restart_after.empty()) {
    const auto floor = overdue_floor();
    if (DeadlineTimer::Clock::now() < floor) {
      set_timer(floor);
      return;
    }
  }
  double wait = restarts_due(false);
  if (helper) {
    describe(kNoLane);
    wait = std::min(wait, t.rule.time_to_next_overdue(t.view));
  }
  // A lane whose copy runs past its stuck deadline stalls, and any idle lane then takes its
  // unstarted tasks over: wake one then too (a little after, so that it finds it stalled).
  // Its copy may have lost to another already (the view shows it as not running: not worth
  // a backup) and still block the lane, ignoring its stop request.
  if (helper && t.rule.options().take_overs()) {
    constexpr double kMargin = 1e-4;
    const TaskClock::Ticks now = clock_.now();
    for (std::size_t j = 0; j < t.lane.size(); ++j) {
      const Tracked::LaneState& lane = t.lane[j];
      if (t.view_task[j] == Tracked::kIdle || t.view[j].unstarted == 0 || t.view[j].stalled) {
        continue;
      }
      const TaskClock::Ticks start = lane.current_start.load(std::memory_order_relaxed);
      const double ran = std::chrono::duration<double>(elapsed(start, now)).count();
      wait = std::min(wait, std::max(lane.stuck_after - ran, 0.0) + kMargin);
    }
  }
  if (!(wait < std::numeric_limits<double>::infinity())) return;
  // Saturated: a wait too long for the clock (a threshold of 1e300, a min_overdue of
  // nanoseconds::max()) is never, not a moment in the past that fires at once, again and again.
  set_timer(saturating_after(DeadlineTimer::Clock::now(), wait));
}

DeadlineTimer::Clock::time_point Batch::overdue_floor() const noexcept {
  return saturating_after(origin_, tracked_->rule.options().min_overdue.value_or(0.0));
}

void Batch::set_timer(DeadlineTimer::Clock::time_point when) noexcept {
  Tracked& t = *tracked_;
  if (when == DeadlineTimer::Clock::time_point::max()) return;
  if (t.timer && t.timer_at <= when) return;
  if (t.recovery.caller != nullptr) {
    // The blocking caller waits anyway: it runs the timer (the id is never used).
    t.recovery.caller->wake_at(*this, when);
    t.timer = DeadlineTimer::Id{0};
    t.timer_at = when;
    return;
  }
  if (t.timer) t.recovery.timer->cancel(*t.timer);
  t.timer.reset();
  try {
    t.timer = t.recovery.timer->schedule(when, [weak = weak_from_this()] {
      if (const auto self = weak.lock()) self->on_timer();
    });
    t.timer_at = when;
  } catch (...) {
    // No timer thread or no memory: the lanes still help whenever one ends a task.
  }
}

void Batch::on_timer() noexcept {
  Tracked& t = *tracked_;
  std::unique_lock lock(t.mutex);
  t.timer.reset();
  if (t.released || stop_.stop_requested()) return;
  restarts_due(true);
  // The caller lane for a chunk stalled in its lane (pick_task takes the rest over), else the
  // lane the rule names.
  double wait = 0.0;
  std::size_t helper =
      can_summon(caller_lane_) && stalled_chunk(wait) != kNoLane ? caller_lane_ : kNoLane;
  if (helper == kNoLane) {
    // Before the overdue floor the timer is for stalled chunks (and restart budgets) only.
    BackupAction action;
    if (!t.recovery.restart_after.empty() || DeadlineTimer::Clock::now() >= overdue_floor()) {
      describe(kNoLane);
      action = t.rule.next(t.view);
    }
    if (action.kind == BackupAction::Kind::none) {
      arm_timer();
      return;
    }
    helper = action.worker;
  }
  t.lane[helper].summoned = true;
  arm_timer();  // for the restart budgets and the other idle lanes
  if (helper == caller_lane_) {
    // Under the lock: the caller waits, alive, until the batch is complete.
    t.recovery.caller->summon_caller();
    return;
  }
  lock.unlock();
  summon(helper);
}

double Batch::restart_budget(std::size_t lane) const noexcept {
  const Tracked& t = *tracked_;
  return backed_off_budget(t.recovery.restart_after[lane], t.lane[lane].restarted_in_row);
}

double Batch::restarts_due(bool request) noexcept {
  Tracked& t = *tracked_;
  double wait = std::numeric_limits<double>::infinity();
  if (t.recovery.restart_after.empty()) return wait;
  const TaskClock::Ticks now = clock_.now();
  for (std::size_t j = 0; j < t.lane.size(); ++j) {
    Tracked::LaneState& lane = t.lane[j];
    // With restart budgets every copy starts and ends under the mutex: `current` is stable.
    const std::size_t task = lane.current.load(std::memory_order_acquire);
    if (task == Tracked::kIdle || lane.restarting || t.done(task)) continue;
    const TaskClock::Ticks start = lane.current_start.load(std::memory_order_relaxed);
    const double left =
        restart_budget(j) - std::chrono::duration<double>(elapsed(start, now)).count();
    if (request && left <= 0.0) {
      lane.restarting = true;
      lane.stop.request_stop();
      continue;
    }
    wait = std::min(wait, std::max(left, 0.0));
  }
  return wait;
}

void Batch::summon(std::size_t lane) noexcept {
  const std::size_t targets[] = {lane};
  try {
    lanes_->submit(shared_from_this(), targets);
  } catch (...) {
    // Shut down: the batch fails, from here if nothing else would decide it.
    std::unique_lock lock(tracked_->mutex);
    tracked_->lane[lane].summoned = false;
    if (!tracked_->summon_lost) tracked_->summon_lost = std::current_exception();
    fail_if_stranded(lock);
  }
}

bool Batch::retry_stranded() const noexcept {
  const Tracked& t = *tracked_;
  if (t.released || t.retry.empty()) return false;
  for (std::size_t j = 0; j < t.lane.size(); ++j) {
    const Tracked::LaneState& lane = t.lane[j];
    // A lane with a share or a place in the race is queued until it enters: it comes.
    if (lane.inside || lane.summoned || ((allocation_[j] > 0 || lane.races) && !lane.entered)) {
      return false;
    }
  }
  return true;
}

void Batch::fail_if_stranded(std::unique_lock<BriefLock>& lock) noexcept {
  if (!tracked_->summon_lost || !retry_stranded()) return;
  std::exception_ptr reason = std::exchange(tracked_->summon_lost, nullptr);
  lock.unlock();
  decide(Outcome::failed, std::move(reason));
}

std::size_t Batch::retry_lane(std::size_t failed) const noexcept {
  const Tracked& t = *tracked_;
  // A stuck lane (quarantined) would run the retry only once its task returns, if ever.
  const auto now = Lane::Clock::now();
  const auto stuck = [&](std::size_t j) { return lanes_->lane(j).stuck_for(now) > 0.0; };
  // A lane inside the batch takes retries when it ends its copy: summon none then.
  for (std::size_t j = 0; j < t.lane.size(); ++j) {
    if (j != failed && (t.lane[j].inside || t.lane[j].summoned) && !stuck(j)) return kNoLane;
  }
  // Else a lane whose queue entry is free: one that reached the batch, or had neither a share
  // nor a place in the race (those are queued until they enter); one that is not stuck
  // first, a stuck one only when every other lane is.
  std::size_t fallback = kNoLane;
  for (std::size_t j = 0; j < t.lane.size(); ++j) {
    const Tracked::LaneState& lane = t.lane[j];
    if (j == failed || (!lane.entered && (allocation_[j] != 0 || lane.races)) || lane.summoned ||
        j == caller_lane_) {
      continue;
    }
    if (!stuck(j)) return j;
    if (fallback == kNoLane) fallback = j;
  }
  return fallback;
}

void Batch::release() noexcept {
  Tracked& t = *tracked_;
  std::lock_guard lock(t.mutex);
  t.released = true;
  if (t.timer) {
    if (t.recovery.caller != nullptr) {
      t.recovery.caller->wake_at(*this, DeadlineTimer::Clock::time_point::max());
    } else {
      t.recovery.timer->cancel(*t.timer);
    }
  }
  t.timer.reset();
  // Copies still running (a batch that owns its task completes without them): their time so
  // far counts, as worker time and as a censored observation.
  const TaskClock::Ticks now = clock_.now();
  for (std::size_t j = 0; j < t.lane.size(); ++j) {
    const Tracked::LaneState& lane = t.lane[j];
    // Every index has its result: a copy still running lost, and its lane records nothing more
    // once it sees `released`.
    const std::size_t task = lane.current.load(std::memory_order_acquire);
    if (task == Tracked::kIdle) continue;
    const TaskClock::Ticks start = lane.current_start.load(std::memory_order_relaxed);
    try {
      discard_copy(j, task, start, elapsed(start, now), true);
    } catch (...) {
      // Out of memory: the report lacks this copy; its time is in busy.
    }
  }
}

}  // namespace ata::runtime::detail

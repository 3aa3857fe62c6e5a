// Tracked allocated batches (Recovery): backup copies and take-overs by ata::BackupRule, the
// simulator's rule; retries of failing tasks; restart budgets; quarantine marks for stuck
// lanes.
//
// A lane runs its share from the front; once the share is done and the batch still waits, it
// asks the rule (as the one available worker) for a take-over (the back of another share) or
// a backup copy of an overdue running one, and runs it; when there is nothing to do it leaves.
// A timer armed for the moment the next running copy becomes overdue for an idle lane sends
// that lane back (the batch is queued on it again: its queue entry is free once it ran). The
// first copy of a task to end without an exception claims the task's result under the mutex
// (exactly one per index) and requests stop of the others; a copy ending after the claim is
// discarded, its time counted as worker time and reported as censored. A failing attempt is
// queued for a retry on another lane while attempts remain, else it fails the batch. With
// restart budgets (Recovery::restart_after), the same timer stops a copy that has run its
// lane's budget; when it returns (whatever with) it is discarded and censored, and its lane
// starts the task afresh before anything else, unless another copy gave the result meanwhile.

#include <algorithm>
#include <chrono>
#include <limits>
#include <utility>

#include "runtime/batch.hpp"
#include "runtime/durations.hpp"

namespace ata::runtime::detail {

namespace {
constexpr std::size_t kNoLane = std::numeric_limits<std::size_t>::max();
}  // namespace

const std::vector<Censored>& Batch::censored() const noexcept {
  static const std::vector<Censored> none;
  return tracked_ ? tracked_->censored : none;
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
      if (pick.source == Source::none) break;
      const std::size_t task = pick.task;
      // A stopped copy's source stays stopped: the next copy gets a fresh one.
      if (!me.stop.stop_possible() || me.stop.stop_requested()) me.stop = std::stop_source();
      ++t.task[task].copies;
      me.running = true;
      me.restarting = false;
      me.task = task;
      me.start = clock_.now();
      const auto started = Lane::Clock::now();
      const double mean = mean_of(i);
      me.stuck_after =
          mean > 0.0 ? t.recovery.stuck_after * mean : std::numeric_limits<double>::infinity();
      // Saturated: a stuck_after of +inf (or one too long for the clock) is never reached.
      worker.mark_task(started, mean > 0.0 ? saturating_after(started, me.stuck_after)
                                           : Lane::Clock::time_point::max());
      arm_timer();
      const TaskContext ctx(task, i, me.stop.get_token());
      const TaskClock::Ticks start = me.start;
      lock.unlock();

      std::exception_ptr error;
      try {
        worker.run_slowed(body_, ctx, round_);
      } catch (...) {
        error = std::current_exception();
      }
      const auto duration = elapsed(start, clock_.now());
      worker.clear_task();
      if (pick.source == Source::own) {
        worker.settle_backlog(1);
        ++logs_[i].settled;
      }

      lock.lock();
      me.running = false;
      Tracked::TaskState& state = t.task[task];
      --state.copies;
      if (t.released) break;  // the caller has its results: nothing more is recorded
      logs_[i].busy += duration;
      if (state.done) {
        // Lost to another copy (stopped, or ended second): discarded, a censored time.
        t.discarded.push_back({task, i, duration, false});
        t.censored.push_back({i, std::chrono::duration<double>(duration).count()});
        continue;
      }
      if (me.restarting) {
        // Stopped at its restart budget: whatever it ended with (its result, or the exception
        // that honoured the stop) is discarded, its time censored, and the task starts afresh.
        t.discarded.push_back({task, i, duration, false});
        t.censored.push_back({i, std::chrono::duration<double>(duration).count()});
        ++t.restarts;
        me.restart = true;
        continue;
      }
      if (error) {
        if (stop_.stop_requested()) break;
        t.discarded.push_back({task, i, duration, false});
        if (state.copies > 0) {
          state.failing = true;  // the copy still running gives the result or the error
          continue;
        }
        if (state.failures < t.recovery.retries) {
          ++state.failures;
          state.failed_on = i;
          t.retry.push_back(task);
          ++t.retried;
          const std::size_t helper = retry_lane(i);
          if (helper != kNoLane) {
            t.lane[helper].summoned = true;
            lock.unlock();
            summon(helper);
            lock.lock();
          }
          continue;
        }
        lock.unlock();
        decide(Outcome::failed, std::move(error));
        lock.lock();
        break;
      }
      // The first copy to end claims the result; the others are stopped.
      state.done = true;
      me.finished_seconds += std::chrono::duration<double>(duration).count();
      ++me.finished;
      TaskRecord& record = records_[task];
      record.task = task;
      record.worker = i;
      record.duration = duration;
      for (Tracked::LaneState& other : t.lane) {
        if (other.running && other.task == task) other.stop.request_stop();
      }
      lock.unlock();
      body_.accept(i, task);
      const bool last = results_left_.fetch_sub(1, std::memory_order_acq_rel) == 1;
      if (last) close();  // nothing more is wanted; copies still running are surplus
      lock.lock();
      if (last) break;
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
  if (retry_stranded() && t.summon_lost) {
    // The lane summoned for a retry never came, and no other lane will take it.
    std::exception_ptr reason = std::exchange(t.summon_lost, nullptr);
    lock.unlock();
    decide(Outcome::failed, std::move(reason));
  }
}

Batch::Pick Batch::pick_task(std::size_t lane) {
  Tracked& t = *tracked_;
  Tracked::LaneState& me = t.lane[lane];
  // 0. The task whose copy it stopped at its restart budget, unless another copy gave it.
  if (me.restart) {
    me.restart = false;
    if (!t.task[me.task].done) return {Source::restart, me.task};
  }
  // 1. A retry this lane did not fail itself (with one lane, there is no other).
  for (auto it = t.retry.begin(); it != t.retry.end(); ++it) {
    if (t.task[*it].failed_on != lane || t.lane.size() == 1) {
      const std::size_t task = *it;
      t.retry.erase(it);
      t.task[task].failing = false;  // a fresh attempt, which may earn a backup again
      return {Source::retry, task};
    }
  }
  // 2. Its own share, from the front.
  if (me.front < me.back) return {Source::own, me.front++};
  // 2b. A racer: the race's next unstarted index.
  if (me.races && t.pool_next < batch_) return {Source::pool, t.pool_next++};
  // 3. Help, if it had a share or races (so that backups never undo the allocation's choice).
  if (!me.helps || !t.rule.options().enabled()) return {};
  describe(lane);
  const BackupAction action = t.rule.next(t.view);
  switch (action.kind) {
    case BackupAction::Kind::take_over:
      ++t.takeovers;
      return {Source::take_over, --t.lane[action.from].back};
    case BackupAction::Kind::backup:
      ++t.backup_copies;
      return {Source::backup, t.lane[action.from].task};
    case BackupAction::Kind::none:
      break;
  }
  return {};
}

void Batch::describe(std::size_t helper) noexcept {
  Tracked& t = *tracked_;
  const TaskClock::Ticks now = clock_.now();
  const auto wall_now = Lane::Clock::now();
  for (std::size_t j = 0; j < t.lane.size(); ++j) {
    const Tracked::LaneState& lane = t.lane[j];
    BackupWorker& view = t.view[j];
    view.mean = mean_of(j);
    view.unstarted = lane.back - lane.front;
    // A copy whose task has its result, or stopped to restart, is about to end: not worth a
    // backup.
    const bool running = lane.running && !t.task[lane.task].done && !lane.restarting;
    view.running = running;
    view.elapsed = running ? std::chrono::duration<double>(elapsed(lane.start, now)).count() : 0.0;
    const Tracked::TaskState& state = t.task[lane.task];
    view.copies = !running ? 0 : state.failing ? t.rule.options().max_copies : state.copies;
    view.available = helper == kNoLane
                         ? lane.helps && lane.entered && !lane.inside && !lane.summoned
                         : j == helper;
    view.stalled = lanes_->lane(j).stuck_for(wall_now) > 0.0;
  }
}

double Batch::mean_of(std::size_t lane) const noexcept {
  const Tracked& t = *tracked_;
  const std::size_t count = t.recovery.counts[lane] + t.lane[lane].finished;
  if (count == 0) return 0.0;
  const double sum = t.recovery.means[lane] * static_cast<double>(t.recovery.counts[lane]) +
                     t.lane[lane].finished_seconds;
  return sum / static_cast<double>(count);
}

void Batch::arm_timer() noexcept {
  Tracked& t = *tracked_;
  const bool hedging = t.rule.options().enabled();
  if (t.released || t.recovery.timer == nullptr || (!hedging && t.recovery.restart_after.empty())) {
    return;
  }
  double wait = time_to_next_restart();
  if (hedging) {
    describe(kNoLane);
    wait = std::min(wait, t.rule.time_to_next_overdue(t.view));
  }
  // A lane whose copy runs past its stuck deadline stalls, and any idle lane then takes its
  // unstarted tasks over: wake one then too (a little after, so that it finds it stalled).
  // Its copy may have lost to another already (the view shows it as not running: not worth
  // a backup) and still block the lane, ignoring its stop request.
  const bool helper = hedging && std::any_of(t.view.begin(), t.view.end(),
                                             [](const BackupWorker& w) { return w.available; });
  if (helper && t.rule.options().take_overs()) {
    constexpr double kMargin = 1e-4;
    const TaskClock::Ticks now = clock_.now();
    for (std::size_t j = 0; j < t.lane.size(); ++j) {
      const Tracked::LaneState& lane = t.lane[j];
      if (!lane.running || t.view[j].unstarted == 0 || t.view[j].stalled) continue;
      const double ran = std::chrono::duration<double>(elapsed(lane.start, now)).count();
      wait = std::min(wait, std::max(lane.stuck_after - ran, 0.0) + kMargin);
    }
  }
  if (!(wait < std::numeric_limits<double>::infinity())) return;
  // Saturated: a wait too long for the clock (a threshold of 1e300, a min_overdue of
  // nanoseconds::max()) is never, not a moment in the past that fires at once, again and again.
  const auto when = saturating_after(DeadlineTimer::Clock::now(), wait);
  if (when == DeadlineTimer::Clock::time_point::max()) return;
  if (t.timer && t.timer_at <= when) return;
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
  request_restarts();
  describe(kNoLane);
  const BackupAction action = t.rule.next(t.view);
  if (action.kind == BackupAction::Kind::none) {
    arm_timer();
    return;
  }
  t.lane[action.worker].summoned = true;
  arm_timer();  // for the restart budgets and the other idle lanes
  lock.unlock();
  summon(action.worker);
}

double Batch::time_to_next_restart() const noexcept {
  const Tracked& t = *tracked_;
  double wait = std::numeric_limits<double>::infinity();
  if (t.recovery.restart_after.empty()) return wait;
  const TaskClock::Ticks now = clock_.now();
  for (std::size_t j = 0; j < t.lane.size(); ++j) {
    const Tracked::LaneState& lane = t.lane[j];
    const double budget = t.recovery.restart_after[j];
    if (!lane.running || lane.restarting || t.task[lane.task].done ||
        !(budget < std::numeric_limits<double>::infinity())) {
      continue;
    }
    const double ran = std::chrono::duration<double>(elapsed(lane.start, now)).count();
    wait = std::min(wait, std::max(budget - ran, 0.0));
  }
  return wait;
}

void Batch::request_restarts() noexcept {
  Tracked& t = *tracked_;
  if (t.recovery.restart_after.empty()) return;
  const TaskClock::Ticks now = clock_.now();
  for (std::size_t j = 0; j < t.lane.size(); ++j) {
    Tracked::LaneState& lane = t.lane[j];
    if (!lane.running || lane.restarting || t.task[lane.task].done) continue;
    const double ran = std::chrono::duration<double>(elapsed(lane.start, now)).count();
    if (ran < t.recovery.restart_after[j]) continue;
    lane.restarting = true;
    lane.stop.request_stop();
  }
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
    if (!retry_stranded()) return;
    std::exception_ptr reason = std::exchange(tracked_->summon_lost, nullptr);
    lock.unlock();
    decide(Outcome::failed, std::move(reason));
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
    if (j == failed || (!lane.entered && (allocation_[j] != 0 || lane.races)) || lane.summoned) {
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
  if (t.timer) t.recovery.timer->cancel(*t.timer);
  t.timer.reset();
  // Copies still running (a batch that owns its task completes without them): their time so
  // far counts, as worker time and as a censored observation.
  const TaskClock::Ticks now = clock_.now();
  for (std::size_t j = 0; j < t.lane.size(); ++j) {
    const Tracked::LaneState& lane = t.lane[j];
    if (!lane.running) continue;
    const auto ran = elapsed(lane.start, now);
    logs_[j].busy += ran;
    try {
      t.discarded.push_back({lane.task, j, ran, false});
      t.censored.push_back({j, std::chrono::duration<double>(ran).count()});
    } catch (...) {
      // Out of memory: the report lacks this copy; its time is in busy.
    }
  }
}

}  // namespace ata::runtime::detail

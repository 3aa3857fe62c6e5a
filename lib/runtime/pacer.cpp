#include "runtime/pacer.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <utility>

#include "ata/runtime/shutdown_error.hpp"
#include "runtime/durations.hpp"

namespace ata::runtime::detail {

namespace {

double seconds_now() noexcept {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

Pacer::Pacer(LaneSet& lanes, DeadlineTimer& timer)
    : lanes_(lanes),
      timer_(&timer),
      lanes_state_(lanes.size()),
      paced_(lanes.size()),
      by_speed_(lanes.size()) {
  for (std::size_t i = 0; i < by_speed_.size(); ++i) {
    by_speed_[i] = i;
    lanes_state_[i].to_wake.reserve(lanes.size());
  }
}

void Pacer::set_means(std::span<const double> means) {
  std::lock_guard lock(mutex_);
  for (std::size_t i = 0; i < paced_.size() && i < means.size(); ++i) {
    paced_[i].mean = std::isfinite(means[i]) && means[i] > 0.0 ? means[i] : 0.0;
  }
  // Stable: equal lanes keep their index order. Unmeasured lanes (0) come first.
  std::stable_sort(by_speed_.begin(), by_speed_.end(),
                   [&](std::size_t a, std::size_t b) { return paced_[a].mean < paced_[b].mean; });
}

void Pacer::submit(const std::shared_ptr<Batch>& batch) {
  std::vector<std::size_t> woken;
  woken.reserve(lanes_state_.size());
  std::optional<double> recheck;
  // Under the lanes' submission lock: the batch joins the queue, where a lane may take its
  // tasks at once, only if the pacer is then queued too, before any shutdown (which fails
  // the batch: it completes once). Refused, the batch was never seen by a lane.
  lanes_.submit_chosen(shared_from_this(), [&]() -> std::span<const std::size_t> {
    std::lock_guard lock(mutex_);
    batches_.push_back(batch);
    // A new batch posts again to lanes whose work was dropped, as a submission to them does.
    for (LaneState& state : lanes_state_) state.lost = false;
    recheck = wake_parked(seconds_now(), woken);
    return woken;
  });
  arm(recheck);
}

void Pacer::run(Lane& lane) noexcept {
  const std::size_t i = lane.index();
  LaneState& me = lanes_state_[i];
  PacedWorker& paced = paced_[i];
  for (;;) {
    std::unique_lock lock(mutex_);
    const double now = seconds_now();
    paced.busy = paced.pending = false;
    me.to_wake.clear();
    std::size_t task = 0;
    const std::shared_ptr<Batch> batch = lanes_.is_shut_down() ? nullptr : pick(i, now, task);
    me.current = batch;
    if (batch) {
      paced.busy = true;
      paced.started = now;
    } else {
      me.active = false;
    }
    // Every decision looks at the parked lanes again: cheap when none qualifies, as the rule
    // stops at the fastest one.
    const std::optional<double> recheck = wake_parked(now, me.to_wake);
    lock.unlock();
    arm(recheck);
    queue_on(me.to_wake);
    if (!batch) return;
    batch->run_entered_task(lane, task);
  }
}

void Pacer::abandon(std::size_t lane, const std::exception_ptr& reason) noexcept {
  std::unique_lock lock(mutex_);
  lanes_state_[lane].active = paced_[lane].busy = paced_[lane].pending = false;
  // Its work was dropped unrun (its executor is gone, or its launcher threw): not woken again
  // for these batches, which would post to it again and again.
  lanes_state_[lane].lost = true;
  const bool others_active = std::ranges::any_of(lanes_state_, &LaneState::active);
  const std::optional<double> recheck = recheck_at(seconds_now());
  lock.unlock();
  arm(recheck);
  // Another lane comes back to the queue; with none, the batches would wait forever.
  if (!others_active || lanes_.is_shut_down()) fail_all(reason);
}

void Pacer::interrupt(const std::exception_ptr& reason) noexcept { fail_all(reason); }

std::size_t Pacer::prune() noexcept {
  std::size_t waiting = 0;
  std::erase_if(batches_, [&](const std::shared_ptr<Batch>& batch) {
    const std::size_t left = batch->unstarted();
    if (left == 0 || batch->closed()) return true;
    waiting += left;
    return false;
  });
  return waiting;
}

std::shared_ptr<Batch> Pacer::pick(std::size_t lane, double now, std::size_t& task) noexcept {
  for (;;) {
    const std::size_t waiting = prune();
    std::size_t skip = ata::reached_by_others(paced_, lane, now, waiting, kStartGrace);
    if (skip >= waiting) return nullptr;
    for (const auto& batch : batches_) {
      const std::size_t left = batch->unstarted();
      if (skip >= left) {
        skip -= left;
        continue;
      }
      if (batch->enter_for_task(task)) return batch;
      break;  // closed since prune(): count again
    }
  }
}

std::optional<double> Pacer::wake_parked(double now, std::vector<std::size_t>& out) noexcept {
  std::size_t waiting = prune();
  for (const std::size_t j : by_speed_) {
    if (waiting == 0) break;
    LaneState& state = lanes_state_[j];
    if (state.active || state.lost) continue;
    if (ata::reached_by_others(paced_, j, now, waiting, kStartGrace) >= waiting) break;
    // Counted as busy from now on, so that the next parked lane is judged with it working.
    state.active = paced_[j].busy = paced_[j].pending = true;
    paced_[j].started = now;
    --waiting;
    out.push_back(j);
  }
  return recheck_at(now);
}

std::optional<double> Pacer::recheck_at(double now) noexcept {
  if (recheck_armed_) return std::nullopt;
  // The fastest parked lane: the first in by_speed_.
  const auto parked = std::ranges::find_if(
      by_speed_, [&](std::size_t j) { return !lanes_state_[j].active && !lanes_state_[j].lost; });
  if (parked == by_speed_.end() || prune() == 0) return std::nullopt;
  recheck_armed_ = true;
  return now + std::max(paced_[*parked].mean, kMinRecheck);
}

void Pacer::detach_timer() noexcept {
  std::lock_guard lock(mutex_);
  timer_ = nullptr;
}

void Pacer::arm(std::optional<double> at) noexcept {
  if (!at) return;
  // Saturated: a lane's learned mean of years must not wrap around to a moment in the past.
  const auto when = DeadlineTimer::Clock::time_point(
      saturating_duration<DeadlineTimer::Clock::duration>(*at));
  // Under the lock, so that detach_timer() cannot let the timer go meanwhile. The timer calls
  // back outside its own lock, so the order pacer, then timer, is never reversed.
  std::lock_guard lock(mutex_);
  try {
    if (timer_ == nullptr) throw std::logic_error("detached");
    timer_->schedule(when, [weak = weak_from_this()] {
      if (const auto self = weak.lock()) self->recheck();
    });
  } catch (...) {
    // Detached, no timer thread or no memory: the next task's end or submission checks.
    recheck_armed_ = false;
  }
}

void Pacer::recheck() noexcept {
  std::vector<std::size_t> woken;
  bool reserved = true;
  try {
    woken.reserve(lanes_state_.size());
  } catch (...) {
    reserved = false;  // no memory: the next task's end or submission checks
  }
  std::unique_lock lock(mutex_);
  recheck_armed_ = false;
  if (!reserved) return;
  const std::optional<double> again = wake_parked(seconds_now(), woken);
  lock.unlock();
  arm(again);
  queue_on(woken);
}

void Pacer::queue_on(std::span<const std::size_t> lanes) noexcept {
  if (lanes.empty()) return;
  try {
    lanes_.submit(shared_from_this(), lanes);
  } catch (...) {
    {
      std::lock_guard lock(mutex_);
      for (const std::size_t i : lanes) {
        lanes_state_[i].active = paced_[i].busy = paced_[i].pending = false;
      }
    }
    fail_all(std::current_exception());
  }
}

void Pacer::fail_all(const std::exception_ptr& reason) noexcept {
  // One batch at a time, allocating nothing, and outside the lock: failing a batch nobody is
  // inside completes it on this thread, which may submit the next one.
  for (;;) {
    std::unique_lock lock(mutex_);
    if (batches_.empty()) break;
    const std::shared_ptr<Batch> batch = std::move(batches_.front());
    batches_.pop_front();
    lock.unlock();
    batch->interrupt(reason);
  }
  for (LaneState& state : lanes_state_) {
    std::unique_lock lock(mutex_);
    const std::shared_ptr<Batch> batch = state.current;
    lock.unlock();
    if (batch) batch->interrupt(reason);
  }
}

}  // namespace ata::runtime::detail

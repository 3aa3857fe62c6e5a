#include "runtime/deadline_timer.hpp"

#if defined(__linux__)
#include <pthread.h>
#endif

namespace ata::runtime::detail {

DeadlineTimer::~DeadlineTimer() {
  if (thread_.joinable()) {
    thread_.request_stop();
    thread_.join();
  }
}

void DeadlineTimer::launch_locked() {
  if (!thread_.joinable()) {
    thread_ = std::jthread([this](const std::stop_token& stop) { serve(stop); });
  }
}

void DeadlineTimer::start() {
  std::unique_lock lock(mutex_);
  launch_locked();
  changed_.wait(lock, [&] { return serving_; });
}

DeadlineTimer::Id DeadlineTimer::schedule(Clock::time_point when, std::function<void()> on_expiry) {
  std::lock_guard lock(mutex_);
  launch_locked();
  const Id id = next_id_++;
  entries_.emplace(when, std::make_pair(id, std::move(on_expiry)));
  // The thread wakes at wake_at_ whatever was cancelled since: only an earlier entry needs it
  // sooner. Batches that arm a timer and complete first thus wake it once per interval, not
  // once each.
  if (when < wake_at_) {
    wake_at_ = when;
    changed_.notify_all();  // the thread, and any start() still waiting
  }
  return id;
}

bool DeadlineTimer::cancel(Id id) {
  std::lock_guard lock(mutex_);
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->second.first == id) {
      entries_.erase(it);
      return true;
    }
  }
  return false;
}

std::uint64_t DeadlineTimer::wakeups() {
  std::lock_guard lock(mutex_);
  return wakeups_;
}

void DeadlineTimer::serve(const std::stop_token& stop) {
#if defined(__linux__)
  // So that top, perf and gdb (and a test) tell it from the lanes.
  (void)pthread_setname_np(pthread_self(), kThreadName);
#endif
  std::unique_lock lock(mutex_);
  serving_ = true;
  changed_.notify_all();  // start() waits for it
  while (!stop.stop_requested()) {
    const auto now = Clock::now();
    if (entries_.empty() || now < entries_.begin()->first) {
      // Sleeps until the front entry's time or, with none, until the time it was last woken
      // for, whose entry was cancelled since: a later schedule() then need not wake it again.
      // Batches that arm a timer and complete first thus wake it once per interval; were it
      // to sleep without limit, the next batch's schedule() would wake it each time.
      Clock::time_point until = Clock::time_point::max();
      if (!entries_.empty()) {
        until = entries_.begin()->first;
      } else if (now < wake_at_) {
        until = wake_at_;
      }
      wake_at_ = until;
      if (until == Clock::time_point::max()) {
        changed_.wait(lock, stop, [&] { return wake_at_ != Clock::time_point::max(); });
      } else {
        changed_.wait_until(lock, stop, until, [&] { return wake_at_ < until; });
      }
      ++wakeups_;
      continue;
    }
    auto expired = std::move(entries_.begin()->second.second);
    entries_.erase(entries_.begin());
    lock.unlock();
    expired();
    lock.lock();
  }
}

}  // namespace ata::runtime::detail

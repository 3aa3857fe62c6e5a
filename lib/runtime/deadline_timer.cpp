#include "runtime/deadline_timer.hpp"

namespace ata::runtime::detail {

DeadlineTimer::~DeadlineTimer() {
  if (thread_.joinable()) {
    thread_.request_stop();
    thread_.join();
  }
}

DeadlineTimer::Id DeadlineTimer::schedule(Clock::time_point when, std::function<void()> on_expiry) {
  std::lock_guard lock(mutex_);
  if (!thread_.joinable()) {
    thread_ = std::jthread([this](const std::stop_token& stop) { serve(stop); });
  }
  const Id id = next_id_++;
  const bool earliest = entries_.empty() || when < entries_.begin()->first;
  entries_.emplace(when, std::make_pair(id, std::move(on_expiry)));
  if (earliest) changed_.notify_one();
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

void DeadlineTimer::serve(const std::stop_token& stop) {
  std::unique_lock lock(mutex_);
  while (!stop.stop_requested()) {
    if (entries_.empty()) {
      changed_.wait(lock, stop, [&] { return !entries_.empty(); });
      continue;
    }
    const auto first = entries_.begin()->first;
    if (Clock::now() < first) {
      // Wakes early when an earlier entry arrives or the front one is cancelled.
      changed_.wait_until(lock, stop, first,
                          [&] { return entries_.empty() || entries_.begin()->first != first; });
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

#pragma once
// Polling before blocking: a thread that sleeps on a condition variable takes tens of
// microseconds to wake (more on a virtual machine), longer than a whole batch of small tasks.
//
// Unless the machine is busy. A poller yields its core between polls; when another process
// takes it, the poller, runnable but not woken, gets it back only when that process's
// scheduler slice ends: milliseconds, where a sleeper is woken at once (the scheduler favours
// a thread that slept). With two CPU-bound processes beside a pool of 2 on 2 cores, one batch
// in 50 then lost 4 ms. So a yield that kept the thread off its core for kLostCore stops the
// polling, and every thread of the process sleeps at once for kBusyPause before it tries
// polling again.

#include <atomic>
#include <chrono>
#include <thread>

namespace ata::runtime::detail {

inline constexpr std::chrono::microseconds kLostCore{1000};
inline constexpr std::chrono::milliseconds kBusyPause{100};
// Until when polling is off (steady_clock ticks), for every poller of the process.
inline std::atomic<std::chrono::steady_clock::rep> polling_off_until{0};

struct YieldCore {
  void operator()() const noexcept { std::this_thread::yield(); }
};

// Polls `ready` for up to `budget`, yielding the core between polls (`yield`; tests pass
// their own) so that a runnable thread (a worker with tasks) is not held up. Returns whether
// `ready` became true.
template <class Ready, class Yield = YieldCore>
bool spin_until(Ready ready, std::chrono::nanoseconds budget, Yield yield = {}) {
  using Clock = std::chrono::steady_clock;
  if (ready()) return true;
  if (budget <= std::chrono::nanoseconds{0}) return false;
  auto now = Clock::now();
  if (now.time_since_epoch().count() < polling_off_until.load(std::memory_order_relaxed)) {
    return false;
  }
  const auto deadline = now + budget;
  do {
    yield();
    const auto yielded = now;
    now = Clock::now();
    if (ready()) return true;
    if (now - yielded > kLostCore) {
      polling_off_until.store((now + kBusyPause).time_since_epoch().count(),
                              std::memory_order_relaxed);
      return false;
    }
  } while (now < deadline);
  return false;
}

}  // namespace ata::runtime::detail

#pragma once
// Per-batch deadlines: one thread, started by start() or on first use, that calls each
// expired entry's callback. A callback runs on the timer thread, outside the timer's lock, and
// must be short and must not throw (it requests a batch's cancellation).

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

namespace ata::runtime::detail {

class DeadlineTimer {
 public:
  using Clock = std::chrono::steady_clock;
  using Id = std::uint64_t;
  // The thread's name (Linux: /proc/<pid>/task/<tid>/comm).
  static constexpr const char* kThreadName = "ata-timer";

  DeadlineTimer() = default;
  // Stops the thread; entries not yet expired never fire.
  ~DeadlineTimer();
  DeadlineTimer(const DeadlineTimer&) = delete;
  DeadlineTimer& operator=(const DeadlineTimer&) = delete;

  // Starts the thread unless it runs, and returns once it does. A thread started on first use
  // waits for a core: measured on 2 cores, 2 to 5 ms behind a caller and lanes that poll, so
  // that a batch's first 50 us restart budget fired after its 2 ms tasks had ended. Thread-safe.
  // Throws std::system_error when the thread cannot start.
  void start();
  // Calls `on_expiry` at `when` unless cancelled first. Thread-safe. Throws
  // std::system_error when the timer thread cannot start.
  Id schedule(Clock::time_point when, std::function<void()> on_expiry);
  // Removes the entry; false when it already fired (or is firing) or never existed.
  bool cancel(Id id);
  // How often the thread has woken up (notified or timed out) since it started: on a 2-core
  // machine a wake-up per batch is a futex call and a core taken from the lanes. Thread-safe.
  [[nodiscard]] std::uint64_t wakeups();

 private:
  void serve(const std::stop_token& stop);
  void launch_locked();  // starts the thread unless it runs (or ran); mutex_ held

  std::mutex mutex_;
  std::condition_variable_any changed_;
  std::multimap<Clock::time_point, std::pair<Id, std::function<void()>>> entries_;  // mutex_
  Id next_id_ = 0;                                                                  // mutex_
  // When the thread wakes next (max: only when notified). mutex_
  Clock::time_point wake_at_ = Clock::time_point::max();
  bool serving_ = false;  // the thread has entered serve(). mutex_
  std::uint64_t wakeups_ = 0;  // mutex_
  std::jthread thread_;   // started by start() or the first schedule(), under mutex_
};

}  // namespace ata::runtime::detail

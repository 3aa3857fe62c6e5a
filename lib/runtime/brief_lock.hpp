#pragma once
// A mutex for sections of a few hundred nanoseconds that several lanes enter at the same
// moment (a tracked batch's start and end): a lane that finds it held polls briefly before it
// sleeps, since a futex sleep and wake-up cost more than the wait they avoid.

#include <mutex>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace ata::runtime::detail {

class BriefLock {
 public:
  void lock() {
    for (int poll = 0; poll < kPolls; ++poll) {
      if (mutex_.try_lock()) return;
#if defined(__x86_64__) || defined(__i386__)
      _mm_pause();
#endif
    }
    mutex_.lock();
  }
  bool try_lock() { return mutex_.try_lock(); }
  void unlock() { mutex_.unlock(); }

 private:
  // About a microsecond of polling: longer than the sections it guards.
  static constexpr int kPolls = 100;
  std::mutex mutex_;
};

}  // namespace ata::runtime::detail

#include "runtime/admission.hpp"

#include <atomic>
#include <catch2/catch_test_macros.hpp>
#include <chrono>
#include <latch>
#include <thread>
#include <vector>

#include "runtime/deadline_timer.hpp"

using ata::runtime::detail::Admission;
using ata::runtime::detail::DeadlineTimer;
using namespace std::chrono_literals;

TEST_CASE("admission holds at most its limit and serves waiters first come, first served",
          "[runtime][backpressure]") {
  Admission admission(2);
  admission.enter();
  CHECK_FALSE(admission.enter_or_queue([] {}).has_value());
  CHECK(admission.in_flight() == 2);

  std::vector<int> order;
  const auto first = admission.enter_or_queue([&] { order.push_back(1); });
  const auto second = admission.enter_or_queue([&] { order.push_back(2); });
  const auto third = admission.enter_or_queue([&] { order.push_back(3); });
  REQUIRE(first.has_value());
  REQUIRE(second.has_value());
  REQUIRE(third.has_value());
  CHECK(admission.withdraw(*second));
  CHECK_FALSE(admission.withdraw(*second));

  admission.leave();  // the slot passes to waiter 1
  CHECK(order == std::vector<int>{1});
  CHECK(admission.in_flight() == 2);
  admission.leave();  // to waiter 3
  CHECK(order == std::vector<int>{1, 3});
  CHECK_FALSE(admission.withdraw(*third));
  admission.leave();
  admission.leave();
  CHECK(admission.in_flight() == 0);
}

TEST_CASE("blocking entries never exceed the limit", "[runtime][backpressure]") {
  constexpr std::size_t kLimit = 3;
  Admission admission(kLimit);
  std::atomic<std::size_t> inside{0};
  std::atomic<std::size_t> most{0};
  std::vector<std::jthread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int k = 0; k < 200; ++k) {
        admission.enter();
        const std::size_t now = inside.fetch_add(1) + 1;
        std::size_t seen = most.load();
        while (now > seen && !most.compare_exchange_weak(seen, now)) {
        }
        std::this_thread::yield();
        inside.fetch_sub(1);
        admission.leave();
      }
    });
  }
  threads.clear();
  CHECK(most.load() <= kLimit);
  CHECK(admission.in_flight() == 0);
}

TEST_CASE("deadlines fire in time order, once, unless cancelled", "[runtime][deadline]") {
  DeadlineTimer timer;
  std::mutex mutex;
  std::vector<int> fired;
  std::latch done(2);
  const auto now = DeadlineTimer::Clock::now();
  timer.schedule(now + 30ms, [&] {
    std::lock_guard lock(mutex);
    fired.push_back(2);
    done.count_down();
  });
  // Far off, so that a loaded machine cannot let it fire before it is cancelled.
  const auto cancelled = timer.schedule(now + 1h, [&] {
    std::lock_guard lock(mutex);
    fired.push_back(0);
  });
  timer.schedule(now + 10ms, [&] {
    std::lock_guard lock(mutex);
    fired.push_back(1);
    done.count_down();
  });
  CHECK(timer.cancel(cancelled));
  done.wait();
  CHECK(DeadlineTimer::Clock::now() - now >= 30ms);
  std::lock_guard lock(mutex);
  CHECK(fired == std::vector<int>{1, 2});
  CHECK_FALSE(timer.cancel(cancelled));
}

TEST_CASE("a timer destroyed with pending deadlines fires none of them", "[runtime][deadline]") {
  std::atomic<int> fired{0};
  {
    DeadlineTimer timer;
    timer.schedule(DeadlineTimer::Clock::now() + 1h, [&] { fired.fetch_add(1); });
  }
  CHECK(fired.load() == 0);
}

TEST_CASE("a deadline scheduled after an earlier one was cancelled unseen still fires",
          "[runtime][deadline]") {
  DeadlineTimer timer;
  std::atomic<int> fired{0};
  const auto wait_for = [&](int count, DeadlineTimer::Clock::duration bound) {
    const auto give_up = DeadlineTimer::Clock::now() + bound;
    while (fired.load() < count && DeadlineTimer::Clock::now() < give_up) {
      std::this_thread::sleep_for(1ms);
    }
    return fired.load();
  };
  // The thread starts, fires this one and waits with nothing left.
  timer.schedule(DeadlineTimer::Clock::now(), [&] { fired.fetch_add(1); });
  REQUIRE(wait_for(1, 10s) == 1);
  for (int round = 1; round <= 3; ++round) {
    // The thread is woken for an entry that is gone by the time it looks...
    CHECK(timer.cancel(timer.schedule(DeadlineTimer::Clock::now() + 5ms, [&] { fired += 100; })));
    std::this_thread::sleep_for(2ms);
    // ...and must still wake for a later one (it once slept on, for ever).
    timer.schedule(DeadlineTimer::Clock::now() + 10ms, [&] { fired.fetch_add(1); });
    CHECK(wait_for(1 + round, 10s) == 1 + round);
  }
}

TEST_CASE("entries armed and cancelled one after another wake the timer once per interval",
          "[runtime][deadline]") {
  // As back-to-back batches do: each arms a deadline 50 ms ahead and cancels it 100 us later.
  // The thread sleeps until the first one's time: the later ones need not wake it (it once
  // woke for each, a futex call and a core taken from the lanes per batch).
  DeadlineTimer timer;
  timer.start();
  constexpr int kEntries = 200;
  for (int i = 0; i < kEntries; ++i) {
    CHECK(timer.cancel(timer.schedule(DeadlineTimer::Clock::now() + 50ms, [] {})));
    std::this_thread::sleep_for(100us);
  }
  // 20 ms or more of entries: at most one wake-up for the first, then none until its time
  // (a few, should sleeping overrun it on a loaded machine), against one for each before.
  CHECK(timer.wakeups() < kEntries / 10);
}

TEST_CASE("a timer started ahead serves its entries, and one never used stops", "[runtime][deadline]") {
  {
    DeadlineTimer unused;
    unused.start();  // returns once its thread serves; the destructor stops it
  }
  DeadlineTimer timer;
  timer.start();
  timer.start();  // already serving: returns at once
  std::latch fired(1);
  timer.schedule(DeadlineTimer::Clock::now(), [&] { fired.count_down(); });
  fired.wait();
  CHECK(fired.try_wait());
}

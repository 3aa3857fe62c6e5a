#include "runtime/task_clock.hpp"

#include <catch2/catch_test_macros.hpp>
#include <chrono>
#include <cmath>
#include <thread>

using ata::runtime::detail::TaskClock;
using namespace std::chrono_literals;

TEST_CASE("the task clock agrees with steady_clock", "[runtime][clock]") {
  const TaskClock& clock = TaskClock::instance();
  INFO("TSC in use: " << clock.uses_tsc() << ", " << clock.tsc_ghz() << " GHz");
  CHECK(clock.to_duration(0) == 0ns);
  // Over a 20 ms sleep the two clocks differ by at most 1% plus the few microseconds between
  // their reads (taken back to back on both sides).
  for (int attempt = 0; attempt < 3; ++attempt) {
    const auto steady_start = std::chrono::steady_clock::now();
    const auto ticks_start = clock.now();
    std::this_thread::sleep_for(20ms);
    const auto ticks_end = clock.now();
    const auto steady_end = std::chrono::steady_clock::now();
    const double measured =
        std::chrono::duration<double>(clock.to_duration(ticks_end - ticks_start)).count();
    const double reference = std::chrono::duration<double>(steady_end - steady_start).count();
    REQUIRE(measured > 0.0);
    if (std::abs(measured - reference) <= 0.01 * reference + 50e-6) return;
  }
  FAIL("the task clock and steady_clock disagreed by more than 1% in three tries");
}

TEST_CASE("task clock readings never go backwards on one thread", "[runtime][clock]") {
  const TaskClock& clock = TaskClock::instance();
  auto previous = clock.now();
  for (int i = 0; i < 100000; ++i) {
    const auto now = clock.now();
    REQUIRE(now >= previous);
    previous = now;
  }
}

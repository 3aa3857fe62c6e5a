// Polling before sleeping (runtime/spin.hpp), and its end on a busy machine: a yield that
// kept the thread off its core for kLostCore turns polling off for every poller of the
// process for kBusyPause.

#include "runtime/spin.hpp"

#include <catch2/catch_test_macros.hpp>
#include <chrono>
#include <thread>

namespace detail = ata::runtime::detail;
using namespace std::chrono_literals;

namespace {

// A yield that only counts itself: polling goes on as long as the budget lasts.
struct CountedYield {
  int* count;
  void operator()() const { ++*count; }
};

// Polls for a `ready` that becomes true at the third poll; returns the yields it took (0 if
// polling gave up). A preemption of over kLostCore between two polls would end it early: it
// is tried again then.
int yields_until_third_poll() {
  for (int attempt = 0; attempt < 5; ++attempt) {
    int polls = 0;
    int yields = 0;
    if (detail::spin_until([&] { return ++polls >= 3; }, 1s, CountedYield{&yields})) return yields;
  }
  return 0;
}

}  // namespace

TEST_CASE("polling stops for a while once a yield has lost the core", "[runtime][spin]") {
  detail::polling_off_until.store(0);
  REQUIRE(yields_until_third_poll() == 2);

  // Another process kept the core for a slice: the poller gives up after that yield.
  int yields = 0;
  const auto lost_core = [&] {
    ++yields;
    std::this_thread::sleep_for(2 * detail::kLostCore);
  };
  CHECK_FALSE(detail::spin_until([] { return false; }, 10s, lost_core));
  CHECK(yields == 1);

  // Every poller then sleeps at once (a ready condition still counts)...
  int polls = 0;
  int none = 0;
  CHECK_FALSE(detail::spin_until([&] { return ++polls >= 2; }, 1s, CountedYield{&none}));
  CHECK(none == 0);
  CHECK(detail::spin_until([] { return true; }, 1s, CountedYield{&none}));

  // ...until kBusyPause has passed.
  std::this_thread::sleep_for(detail::kBusyPause + 10ms);
  CHECK(yields_until_third_poll() == 2);
}

TEST_CASE("polling with no budget only looks once", "[runtime][spin]") {
  detail::polling_off_until.store(0);
  int yields = 0;
  CHECK_FALSE(detail::spin_until([] { return false; }, 0ns, CountedYield{&yields}));
  CHECK(detail::spin_until([] { return true; }, 0ns, CountedYield{&yields}));
  CHECK(yields == 0);
}

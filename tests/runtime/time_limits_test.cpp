// Time settings at the ends of their range (issue 25, defects 9 to 11): +inf, huge multiples
// and nanoseconds::max() saturate to "never" instead of overflowing into "now"; a negative
// deadline is refused.

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <limits>
#include <mutex>
#include <stop_token>
#include <thread>
#include <vector>

#include "ata/ata.hpp"
#include "support/nap.hpp"
#include "support/without_backups.hpp"

using namespace std::chrono_literals;
namespace rt = ata::runtime;
using ata::testing::nap;
using Catch::Matchers::ContainsSubstring;

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// The process's CPU time (user + system, every thread) so far.
std::chrono::microseconds process_cpu_time() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return std::chrono::seconds(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         std::chrono::microseconds(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
}

}  // namespace

TEST_CASE("stuck_after +inf means never: no lane is ever reported stuck",
          "[runtime][stragglers][errors]") {
  constexpr std::size_t kWorkers = 2;
  constexpr std::size_t kBatch = 4;
  const auto options = rt::SchedulerOptions{}
                           .set_backups(ata::BackupOptions{}.set_mode(ata::BackupMode::on))
                           .set_stuck_after(kInfinity);
  CHECK(options.stuck_after() == kInfinity);
  CHECK_THROWS_WITH(rt::SchedulerOptions{}.set_stuck_after(std::numeric_limits<double>::quiet_NaN()),
                    ContainsSubstring("stuck_after must be > 1") && ContainsSubstring("nan"));
  rt::WorkerPool pool(kWorkers);
  ata::UniformPolicy policy(kWorkers);
  rt::BatchScheduler scheduler(pool, policy, options);
  std::atomic<int> seen_stuck{0};
  // From the second batch on every lane has a mean: a task looks whether its lane is listed.
  for (int round = 0; round < 4; ++round) {
    auto [values, report] = scheduler.run(kBatch, [&](const rt::TaskContext& ctx) {
      std::this_thread::sleep_for(1ms);
      const auto stuck = pool.stuck_lanes();
      if (std::find(stuck.begin(), stuck.end(), ctx.worker()) != stuck.end()) ++seen_stuck;
      return ctx.task();
    });
    CHECK(values.size() == kBatch);
  }
  CHECK(seen_stuck == 0);
  CHECK(pool.stuck_lanes().empty());
}

TEST_CASE("a deadline of nanoseconds::max() is no deadline at all", "[runtime][errors]") {
  rt::WorkerPool pool(2);
  ata::UniformPolicy policy(2);
  rt::BatchScheduler scheduler(pool, policy, ata::testing::without_backups());
  rt::BatchOptions options;
  options.deadline = std::chrono::nanoseconds::max();
  // Tasks that take a while: a deadline that passed at once would cancel them.
  auto [values, report] = scheduler.run(
      4,
      [](const rt::TaskContext& ctx) {
        nap(ctx, 20ms);
        return ctx.task();
      },
      options);
  CHECK(values == std::vector<std::size_t>{0, 1, 2, 3});
}

TEST_CASE("a negative deadline is refused, naming it", "[runtime][errors]") {
  rt::WorkerPool pool(2);
  ata::UniformPolicy policy(2);
  rt::BatchScheduler scheduler(pool, policy, ata::testing::without_backups());
  rt::BatchOptions options;
  options.deadline = -5ms;
  std::atomic<int> ran{0};
  CHECK_THROWS_AS(scheduler.run(4, [&](const rt::TaskContext&) { ++ran; }, options),
                  ata::InvalidArgument);
  CHECK_THROWS_WITH(scheduler.run(4, [&](const rt::TaskContext&) { ++ran; }, options),
                    ContainsSubstring("deadline") && ContainsSubstring("-5000000 ns"));
  CHECK(ran == 0);
  CHECK(scheduler.rounds() == 0);
}

TEST_CASE("a huge backup threshold or min_overdue does not make the timer spin",
          "[runtime][stragglers]") {
  constexpr std::size_t kWorkers = 2;
  ata::BackupOptions backups = ata::BackupOptions{}.set_mode(ata::BackupMode::on);
  SECTION("threshold 1e300") { backups.set_threshold_multiple(1e300); }
  SECTION("threshold +inf") { backups.set_threshold_multiple(kInfinity); }
  SECTION("min_overdue 1e300 s, beyond the clock's range") { backups.set_min_overdue(1e300); }
  const auto options = rt::SchedulerOptions{}.set_backups(backups);
  // No idle spinning: a lane without work sleeps, so the process burns next to no CPU time
  // while the one task sleeps, unless the timer thread spins.
  rt::WorkerPool pool(rt::PoolOptions(kWorkers).set_idle_spin(0ns));
  ata::UniformPolicy policy(kWorkers);
  rt::BatchScheduler scheduler(pool, policy, options);
  for (int warm_up = 0; warm_up < 3; ++warm_up) {
    (void)scheduler.run(kWorkers, [](const rt::TaskContext& ctx) {
      nap(ctx, 1ms);
      return ctx.task();
    });
  }
  // One lane ends its task at once and waits, available for a backup copy that is never due,
  // while the other's task sleeps (task 0, wherever it runs: the idle lane may have taken it
  // over before the other lane reached the batch).
  const auto cpu_before = process_cpu_time();
  const auto wall_before = std::chrono::steady_clock::now();
  auto [values, report] = scheduler.run(kWorkers, [](const rt::TaskContext& ctx) {
    if (ctx.task() == 0) nap(ctx, 300ms);
    return ctx.task();
  });
  const auto wall = std::chrono::steady_clock::now() - wall_before;
  const auto cpu = process_cpu_time() - cpu_before;
  CHECK(report.backup_copies == 0);
  // Spinning, the timer thread took a good part of a core (about 90% on an idle machine) for
  // the whole batch; waiting, the process uses next to none of the wall time it measured.
  CAPTURE(std::chrono::duration<double>(cpu).count(), std::chrono::duration<double>(wall).count());
  CHECK(cpu * 10 < wall);
}

// [lanes] on WorkerPool and on PostedLanes over plain std::threads: everything here runs under
// ThreadSanitizer (scripts/test). The scenarios shared by every kind are in lane_scenarios.hpp.
#include <tuple>
#include <type_traits>
#include <vector>

#include "lanes/lane_kinds.hpp"

using LaneKinds = std::tuple<ata::testing::OwnThreads, ata::testing::PostedOnThreadQueue>;
#define ATA_LANES_TAG "[posted]"
#define ATA_LANES_PREFIX "threads and posted lanes: "
#include "lanes/lane_scenarios.hpp"
#include "support/without_backups.hpp"

namespace ata::testing::lanes {
namespace {

// Lane 1's launcher throws, or drops its work, while `failing` is set.
struct FlakyLaunchers {
  ThreadQueue queue{2};
  std::atomic<bool> failing = true;
  std::atomic<int> mode = 0;  // 0: throw, 1: drop the work unrun

  std::vector<rt::PostedLanes::Launcher> make() {
    std::vector<rt::PostedLanes::Launcher> launchers;
    launchers.push_back(queue.launcher());
    launchers.push_back([this](std::function<void()> work) {
      if (failing.load()) {
        if (mode.load() == 0) throw std::runtime_error("executor refused the work");
        return;  // `work` dies here, unrun
      }
      queue.push(std::move(work));
    });
    return launchers;
  }
};

}  // namespace

TEST_CASE("posted lanes: a launcher that throws or drops its work fails the batch, not the lanes",
          "[lanes][posted][errors]") {
  const int mode = GENERATE(0, 1);
  const std::string name = GENERATE("uta", "gta", "pull");
  CAPTURE(mode, name);
  FlakyLaunchers flaky;
  flaky.mode = mode;
  rt::PostedLanes lanes(flaky.make());
  auto policy = ata::make_policy(name, 2);
  rt::BatchScheduler scheduler(lanes, *policy, ata::testing::without_backups());
  const auto task = [](const rt::TaskContext& ctx) { return ctx.task() * ctx.task(); };
  for (int round = 0; round < 3; ++round) {
    if (name == "uta") {
      // Lane 1's share can run nowhere else: the batch fails, naming the launcher.
      CHECK_THROWS_MATCHES(
          scheduler.run(4, task), ata::Error,
          MessageMatches(ContainsSubstring("posted lane set: a lane's launcher failed")));
    } else {
      // Lane 0 runs what lane 1 cannot.
      const auto result = scheduler.run(4, task);
      for (std::size_t j = 0; j < 4; ++j) CHECK(result.values[j] == j * j);
      for (const auto& record : result.report.tasks) CHECK(record.worker == 0);
    }
  }
  flaky.failing = false;
  Calls calls(2);
  const auto result = scheduler.run(8, [&](const rt::TaskContext& ctx) {
    calls.note(ctx);
    return ctx.task() * ctx.task();
  });
  calls.check(result, 8);
  if (name == "uta") CHECK(result.report.allocation[1] == 4);
}

TEST_CASE("posted lanes: work called twice runs once", "[lanes][posted]") {
  ThreadQueue queue(2);
  std::vector<rt::PostedLanes::Launcher> launchers(2, [&queue](std::function<void()> work) {
    queue.push(work);  // a copy
    queue.push(std::move(work));
  });
  rt::PostedLanes lanes(std::move(launchers));
  auto policy = ata::make_policy("pull", 2);
  rt::BatchScheduler scheduler(lanes, *policy, ata::testing::without_backups());
  for (int round = 0; round < 20; ++round) {
    Calls calls(2);
    const auto result = scheduler.run(16, [&](const rt::TaskContext& ctx) {
      calls.note(ctx);
      return ctx.task() * ctx.task();
    });
    calls.check(result, 16);
  }
}

TEST_CASE("posted lanes: work posted before a shutdown finds its lane stopped",
          "[lanes][posted][errors]") {
  const bool destroy = GENERATE(false, true);
  CAPTURE(destroy);
  HeldWork held;
  auto lanes = std::make_unique<rt::PostedLanes>(
      std::vector<rt::PostedLanes::Launcher>{held.launcher(), held.launcher()});
  ata::UniformPolicy policy(2);
  rt::BatchScheduler scheduler(*lanes, policy, ata::testing::without_backups());
  std::atomic<int> ran = 0;
  auto pending = std::async(std::launch::async, [&] {
    return scheduler.run(4, [&](const rt::TaskContext&) { ran.fetch_add(1); });
  });
  // One run per lane is posted, and held by the executor.
  REQUIRE(eventually([&] { return held.size() == 2 && lanes->queued_chunks() == 2; }));
  if (destroy) {
    lanes.reset();
  } else {
    lanes->shutdown();
  }
  CHECK_THROWS_MATCHES(pending.get(), rt::ShutdownError,
                       MessageMatches(ContainsSubstring("never ran its share")));
  held.run_all();  // after the shutdown, or after the lanes are gone
  CHECK(ran.load() == 0);
  CHECK(held.size() == 0);
}

TEST_CASE("posted lanes: a deadline ends a batch whose executor never runs it",
          "[lanes][posted][errors]") {
  HeldWork held;
  rt::PostedLanes lanes({held.launcher()});
  ata::UniformPolicy policy(1);
  rt::BatchScheduler scheduler(lanes, policy, ata::testing::without_backups());
  CHECK_THROWS_AS(scheduler.run(
                      2, [](const rt::TaskContext&) {}, rt::BatchOptions{20ms}),
                  rt::DeadlineError);
  // The executor comes back: the late run skips the timed-out batch, and the lane works on.
  held.run_all();
  auto next = std::async(std::launch::async, [&] {
    return scheduler.run(3, [](const rt::TaskContext& ctx) { return ctx.task(); });
  });
  REQUIRE(eventually([&] {
    held.run_all();
    return next.wait_for(0s) == std::future_status::ready;
  }));
  CHECK(next.get().values == std::vector<std::size_t>{0, 1, 2});
}

TEST_CASE("posted lanes: bad launchers and options are refused", "[lanes][posted][errors]") {
  ThreadQueue queue(1);
  CHECK_THROWS_MATCHES(rt::PostedLanes(std::vector<rt::PostedLanes::Launcher>{}),
                       ata::InvalidArgument, MessageMatches(ContainsSubstring("got no launcher")));
  CHECK_THROWS_MATCHES(
      rt::PostedLanes(std::vector<rt::PostedLanes::Launcher>{queue.launcher(), nullptr}),
      ata::InvalidArgument, MessageMatches(ContainsSubstring("lane 1 has no launcher")));
  CHECK_THROWS_MATCHES(
      rt::PostedLanes({queue.launcher(), queue.launcher(), queue.launcher()}, rt::LaneOptions(2)),
      ata::InvalidArgument,
      MessageMatches(ContainsSubstring("3 launchers for options of 2 workers")));
  // Pinning is not the lanes' to do (the executor owns the threads): PoolOptions, which pin,
  // do not compile here; LaneOptions, which cannot, do.
  static_assert(!std::is_constructible_v<rt::PostedLanes, std::vector<rt::PostedLanes::Launcher>,
                                         const rt::PoolOptions&>);
  static_assert(std::is_constructible_v<rt::PostedLanes, std::vector<rt::PostedLanes::Launcher>,
                                        const rt::LaneOptions&>);
  // A policy for another number of workers.
  rt::PostedLanes lanes({queue.launcher(), queue.launcher()});
  ata::UniformPolicy three(3);
  CHECK_THROWS_MATCHES(rt::BatchScheduler(lanes, three), ata::InvalidArgument,
                       MessageMatches(ContainsSubstring("3 workers but there are 2 lanes")));
}

}  // namespace ata::testing::lanes

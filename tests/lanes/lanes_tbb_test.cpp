// [lanes] on ArenaLanes: arenas made from constraints of different concurrency, and arenas
// the user owns. Labelled [tbb] and kept out of ThreadSanitizer runs: Debian's libtbb is not
// instrumented. The kinds are in tbb_lane_kinds.hpp, the shared scenarios in
// lane_scenarios.hpp.
// core_type in task_arena::constraints is a preview in oneTBB 2021 (one TU here uses TBB).
#define TBB_PREVIEW_TASK_ARENA_CONSTRAINTS_EXTENSION 1
#include <chrono>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/info.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>
#include <tuple>
#include <type_traits>
#include <vector>

#include "ata/runtime/arena_lanes.hpp"
#include "lanes/lane_kinds.hpp"
#include "lanes/tbb_lane_kinds.hpp"

using LaneKinds = std::tuple<ata::testing::ArenasFromConstraints, ata::testing::UserArenas>;
#define ATA_LANES_TAG "[tbb]"
#define ATA_LANES_PREFIX "arena lanes: "
#include "lanes/lane_scenarios.hpp"
#include "support/child_test.hpp"
#include "support/without_backups.hpp"

namespace ata::testing::lanes {

namespace {

std::size_t thread_limit() {
  return tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism);
}

}  // namespace

TEMPLATE_LIST_TEST_CASE("arena lanes: a task runs in its lane's arena, TBB inside it too",
                        "[lanes][tbb]", LaneKinds) {
  CAPTURE(TestType::name);
  TestType kind;
  auto lanes = kind.make(rt::LaneOptions(3));
  auto policy = ata::make_policy("pull", 3);
  rt::BatchScheduler scheduler(*lanes, *policy, ata::testing::without_backups());
  const auto result = scheduler.run(12, [](const rt::TaskContext& ctx) {
    std::atomic<std::size_t> sum = 0;
    tbb::parallel_for(std::size_t{0}, std::size_t{100}, [&](std::size_t k) { sum.fetch_add(k); });
    const bool right_arena =
        tbb::this_task_arena::max_concurrency() == concurrency_of(ctx.worker());
    return right_arena && sum.load() == 4950;
  });
  for (std::size_t j = 0; j < 12; ++j) CHECK(result.values[j]);
}

namespace {

// Two sets of 2 and 3 lanes of concurrency 2 and 1, each set's batch started by a thread of
// its own, every task waiting until all 5 run (for at most `patience`): whether all did.
bool two_sets_all_run_at_once(std::chrono::seconds patience) {
  ArenasFromConstraints kind;
  auto small = kind.make(rt::LaneOptions(2));
  auto large = kind.make(rt::LaneOptions(3));
  CHECK(thread_limit() >= 1 + (2 + 1) + (2 + 1 + 2));
  std::atomic<int> inside = 0;
  const auto task = [&](const rt::TaskContext&) {
    inside.fetch_add(1);
    return eventually([&] { return inside.load() == 5; }, patience);
  };
  ata::UniformPolicy two(2);
  ata::UniformPolicy three(3);
  rt::BatchScheduler on_small(*small, two, ata::testing::without_backups());
  rt::BatchScheduler on_large(*large, three, ata::testing::without_backups());
  auto first = std::async(std::launch::async, [&] { return on_small.run(2, task); });
  const auto second = on_large.run(3, task);
  bool all = true;
  for (bool ran : first.get().values) all = all && ran;
  for (bool ran : second.values) all = all && ran;
  return all;
}

}  // namespace

// [serial]: five lanes must run at once on two cores. While the lanes enqueued their runs,
// TBB now and then left one waiting until another's task ended (1 run in 15: see the
// process-after-process test below), which earlier notes here took for load. The wait is a
// hang guard, not a time limit: 100 s, within the target's CTest timeout. On this machine's
// default of 2 threads, or with each set raising the limit for itself (TBB keeps the
// smallest), some would never start.
TEST_CASE("arena lanes: every lane of every live set gets a thread at once",
          "[lanes][tbb][serial]") {
  const std::size_t before = thread_limit();
  CHECK(two_sets_all_run_at_once(std::chrono::seconds(100)));
  // The limit is TBB's own again once the lanes are gone.
  CHECK(thread_limit() == before);
}

// The same in a process of its own (TBB's first workers), started by the test below.
TEST_CASE("arena lanes: five fresh lanes in two sets all run at once", "[.][tbb-child]") {
  REQUIRE(two_sets_all_run_at_once(std::chrono::seconds(20)));
}

// Enqueued into their arenas (task_arena::enqueue), lanes' runs waited for TBB to send a
// worker, and oneTBB 2021.8 sometimes sent none: an arena of concurrency 2 whose spare worker
// found nothing to do withdrew its demand while its first worker was still busy, TBB then
// counted too few workers to wake a sleeping one, and a lane started only once another lane's
// task ended. It happened in 1 process in 15 to 100 (the test above, the engine tests, this
// one), in a process's first batches: hence fresh processes; 5 runs in 6 of this test failed.
// A process that hangs is killed after 60 s.
TEST_CASE("arena lanes: every lane runs at once, process after process", "[lanes][tbb][stress]") {
  constexpr int kProcesses = 150;
  for (int process = 0; process < kProcesses; ++process) {
    CAPTURE(process);
    REQUIRE(run_child_test("[tbb-child]", std::chrono::seconds(60)) == "");
  }
}

// Reading the topology loads libtbbbind with RTLD_DEEPBIND, which AddressSanitizer's runtime
// refuses (it aborts): not under ASan.
#ifndef __SANITIZE_ADDRESS__
TEST_CASE("arena lanes: one lane per NUMA node and core type", "[lanes][tbb]") {
  // One lane on this machine (one node, one core type); on a hybrid or multi-socket machine,
  // one per part, each running its tasks on its own cores.
  std::vector<tbb::task_arena::constraints> parts;
  for (const auto node : tbb::info::numa_nodes()) {
    for (const auto type : tbb::info::core_types()) {
      parts.push_back(tbb::task_arena::constraints{}.set_numa_id(node).set_core_type(type));
    }
  }
  REQUIRE_FALSE(parts.empty());
  rt::ArenaLanes lanes(parts);
  ata::AtaAutoPolicy policy(lanes.size());
  rt::BatchScheduler scheduler(lanes, policy, ata::testing::without_backups());
  const auto result = scheduler.run(4 * parts.size(), [&](const rt::TaskContext& ctx) {
    return tbb::this_task_arena::max_concurrency() ==
           tbb::info::default_concurrency(parts[ctx.worker()]);
  });
  for (bool right : result.values) CHECK(right);
}
#endif

TEST_CASE("arena lanes: a user arena with a slot reserved for masters still runs its lane",
          "[lanes][tbb]") {
  tbb::task_arena reserved(1, 1);
  rt::ArenaLanes lanes(std::vector<tbb::task_arena*>{&reserved});
  ata::UniformPolicy policy(1);
  rt::BatchScheduler scheduler(lanes, policy, ata::testing::without_backups());
  CHECK(scheduler.run(3, [](const rt::TaskContext& ctx) { return ctx.task(); }).values ==
        std::vector<std::size_t>{0, 1, 2});
}

TEST_CASE("arena lanes: no parts, no arenas, a null arena and bad options are refused",
          "[lanes][tbb][errors]") {
  CHECK_THROWS_MATCHES(rt::ArenaLanes(std::vector<tbb::task_arena::constraints>{}),
                       ata::InvalidArgument,
                       MessageMatches(ContainsSubstring("needs at least one part")));
  CHECK_THROWS_MATCHES(rt::ArenaLanes(std::vector<tbb::task_arena*>{}), ata::InvalidArgument,
                       MessageMatches(ContainsSubstring("needs at least one arena")));
  tbb::task_arena arena(1, 0);
  CHECK_THROWS_MATCHES(rt::ArenaLanes(std::vector<tbb::task_arena*>{&arena, nullptr}),
                       ata::InvalidArgument, MessageMatches(ContainsSubstring("arena 1 is null")));
  CHECK_THROWS_MATCHES(
      rt::ArenaLanes(std::vector<tbb::task_arena::constraints>(2), rt::LaneOptions(3)),
      ata::InvalidArgument,
      MessageMatches(ContainsSubstring("2 launchers for options of 3 workers")));
  // The arenas' threads are not the lanes' to pin (a task_scheduler_observer is): PoolOptions
  // do not compile here.
  static_assert(!std::is_constructible_v<rt::ArenaLanes, std::vector<tbb::task_arena*>,
                                         const rt::PoolOptions&>);
  static_assert(!std::is_constructible_v<rt::ArenaLanes, std::vector<tbb::task_arena::constraints>,
                                         const rt::PoolOptions&>);
  static_assert(std::is_constructible_v<rt::ArenaLanes, std::vector<tbb::task_arena*>,
                                        const rt::LaneOptions&>);
}

}  // namespace ata::testing::lanes

// The caller lane (CallerLanePool): a pool's last worker is each batch's
// caller, which runs that worker's part of its batch inline, and, with backups, takes over the
// tasks of lanes that have not started theirs.

#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <thread>
#include <type_traits>
#include <vector>

#include "ata/ata.hpp"
#include "support/exactly_once.hpp"
#include "support/gate.hpp"
#include "support/nap.hpp"
#include "support/without_backups.hpp"

using namespace std::chrono_literals;
namespace rt = ata::runtime;
using ata::testing::check_exactly_once;
using Catch::Matchers::ContainsSubstring;

TEST_CASE("the caller lane's tasks run on the batch's caller, whatever the plan",
          "[runtime][caller]") {
  constexpr std::size_t kWorkers = 3;
  constexpr std::size_t kBatch = 24;
  const auto [name, backups] = GENERATE(table<const char*, bool>({
      {"uta", false},  // quotas
      {"uta", true},   // quotas, tracked (backups)
      {"pull", false},  // an indexed race
      {"pull", true},   // an indexed race, tracked
      {"gta", false},   // a fungible race
  }));
  CAPTURE(name, backups);
  rt::CallerLanePool pool(kWorkers - 1);
  auto policy = ata::make_policy(name, kWorkers);
  rt::BatchScheduler scheduler(pool, *policy,
                               backups ? rt::SchedulerOptions{} : ata::testing::without_backups());
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<std::size_t> caller_lane_tasks = 0;
  std::atomic<std::size_t> misplaced = 0;
  const auto task = [&](const rt::TaskContext& ctx) {
    const bool on_caller = std::this_thread::get_id() == caller;
    if (on_caller != (ctx.worker() == kWorkers - 1)) misplaced.fetch_add(1);
    if (on_caller) caller_lane_tasks.fetch_add(1);
    std::this_thread::sleep_for(200us);
    return ctx.task();
  };
  for (int round = 0; round < 5; ++round) {
    auto [values, report] = scheduler.run(kBatch, task);
    if (std::string_view(name) == "gta") {
      REQUIRE(values.size() == kBatch);
    } else {
      check_exactly_once(values, report, kBatch);
    }
  }
  CHECK(misplaced.load() == 0);
  // The caller raced or had quotas in every round: it ran some of them.
  CHECK(caller_lane_tasks.load() > 0);
  // It is learned like any other worker.
  CHECK(policy->stats(kWorkers - 1).count() > 0);
}

TEST_CASE("a caller-lane pool needs a thread besides its caller", "[runtime][caller][errors]") {
  // Its asynchronous batches run on the threads: with none, nothing would run them.
  CHECK_THROWS_AS(rt::CallerLanePool(0), ata::InvalidArgument);
  CHECK_THROWS_WITH(rt::CallerLanePool(0), ContainsSubstring("at least one thread"));
  rt::CallerLanePool pool(1);
  CHECK(pool.size() == 2);
  CHECK(pool.has_caller_lane());
  CHECK_FALSE(rt::WorkerPool(2).has_caller_lane());
}

TEST_CASE("the caller takes over the share of a lane busy elsewhere",
          "[runtime][caller][stragglers]") {
  // Worker 0 is a thread, worker 1 the caller lane. Another scheduler's batch holds worker 0
  // at a gate; this batch's share for worker 0 is taken over by the caller, and the batch ends
  // with the gate still closed.
  rt::CallerLanePool pool(1);
  ata::testing::Gate gate;
  std::atomic<bool> holding = false;
  ata::FixedPlanPolicy hold_policy(
      "hold", ata::Plan::quotas(ata::Allocation(std::vector<std::size_t>{1, 0})));
  rt::BatchScheduler holder(pool, hold_policy, ata::testing::without_backups());
  std::thread held([&] {
    holder.run(1, [&](const rt::TaskContext& ctx) {
      holding = true;
      gate.wait(ctx);
    });
  });
  while (!holding.load()) std::this_thread::sleep_for(1ms);

  ata::FixedPlanPolicy even(
      "even", ata::Plan::quotas(ata::Allocation(std::vector<std::size_t>{4, 4})));
  // Whatever the backups: the caller takes over from a lane that has not reached the batch.
  const bool backups = GENERATE(true, false);
  CAPTURE(backups);
  rt::BatchScheduler scheduler(pool, even,
                               backups ? rt::SchedulerOptions{} : ata::testing::without_backups());
  auto [values, report] = scheduler.run(8, [](const rt::TaskContext& ctx) {
    std::this_thread::sleep_for(100us);
    return ctx.task();
  });
  check_exactly_once(values, report, 8);
  for (const rt::TaskRecord& record : report.tasks) CHECK(record.worker == 1);
  CHECK(report.takeovers == 4);
  gate.open();
  held.join();
}

TEST_CASE("concurrent callers each run their own batch's caller-lane part",
          "[runtime][caller][stress]") {
  constexpr std::size_t kWorkers = 3;
  constexpr std::size_t kCallers = 6;
  constexpr int kRounds = 150;
  rt::CallerLanePool pool(kWorkers - 1);
  auto policy = ata::make_policy("ata-auto", kWorkers);
  rt::BatchScheduler scheduler(pool, *policy);
  std::atomic<std::size_t> misplaced = 0;
  std::atomic<std::size_t> wrong_results = 0;
  std::vector<std::thread> callers;
  for (std::size_t c = 0; c < kCallers; ++c) {
    callers.emplace_back([&, c] {
      const std::thread::id me = std::this_thread::get_id();
      for (int round = 0; round < kRounds; ++round) {
        const std::size_t batch = 1 + (c + static_cast<std::size_t>(round)) % 16;
        auto [values, report] = scheduler.run(batch, [&](const rt::TaskContext& ctx) {
          // The caller lane's tasks run on this batch's caller, and only there.
          if ((ctx.worker() == kWorkers - 1) != (std::this_thread::get_id() == me)) {
            misplaced.fetch_add(1);
          }
          return ctx.task() * 2 + 1;
        });
        for (std::size_t t = 0; t < batch; ++t) {
          if (values[t] != t * 2 + 1) wrong_results.fetch_add(1);
        }
      }
    });
  }
  for (auto& caller : callers) caller.join();
  CHECK(misplaced.load() == 0);
  CHECK(wrong_results.load() == 0);
  CHECK(scheduler.rounds() == kCallers * kRounds);
}

TEST_CASE("a task on the caller lane may not start a batch of its own pool",
          "[runtime][caller]") {
  rt::CallerLanePool pool(1);
  // The batch's one task goes to worker 1, the caller lane.
  ata::FixedPlanPolicy policy("on the caller", ata::Plan::quotas(ata::Allocation({0, 1})));
  rt::BatchScheduler scheduler(pool, policy);
  std::atomic<bool> on_caller = false;
  const std::thread::id caller = std::this_thread::get_id();
  CHECK_THROWS_WITH(scheduler.run(1,
                                  [&](const rt::TaskContext&) {
                                    on_caller = std::this_thread::get_id() == caller;
                                    scheduler.run(1, [](const rt::TaskContext&) {});
                                  }),
                    ContainsSubstring("would wait for itself"));
  CHECK(on_caller.load());
  // The pool is still usable.
  auto [values, report] = scheduler.run(1, [](const rt::TaskContext& ctx) { return ctx.task(); });
  check_exactly_once(values, report, 1);
}

// What a caller lane cannot do does not compile; what it can does.
static_assert(!std::is_constructible_v<rt::BatchScheduler, rt::CallerLanePool&, ata::Policy&,
                                       const rt::LateBindingOptions&>);
static_assert(!std::is_constructible_v<rt::TaskStream, rt::CallerLanePool&>);
static_assert(std::is_constructible_v<rt::BatchScheduler, rt::CallerLanePool&, ata::Policy&,
                                      const rt::SchedulerOptions&>);
static_assert(!std::is_convertible_v<rt::CallerLanePool, rt::WorkerPool>);

TEST_CASE("a caller lane reached through Lanes& is still refused where it cannot be one",
          "[runtime][caller][errors]") {
  rt::CallerLanePool pool(1);
  rt::Lanes& lanes = pool;
  SECTION("a task stream") {
    CHECK_THROWS_AS(rt::TaskStream(lanes), ata::InvalidArgument);
    CHECK_THROWS_WITH(rt::TaskStream(lanes), ContainsSubstring("caller lane"));
  }
  SECTION("late binding") {
    auto policy = ata::make_policy("ata-e", 2);
    CHECK_THROWS_WITH(rt::BatchScheduler(lanes, *policy, rt::LateBindingOptions{}),
                      ContainsSubstring("caller lane"));
  }
}

TEST_CASE("a caller-lane pool's options describe its threads", "[runtime][caller]") {
  // Slowdowns, pinning and the seed apply to the threads; the caller lane has none of them.
  auto threads = rt::PoolOptions(2).set_seed(7).set_idle_spin(10us);
  threads.set_slowdown(0, rt::Slowdown::repeat(2)).set_cpu(1, 0);
  rt::CallerLanePool pool(threads);
  REQUIRE(pool.size() == 3);
  CHECK(pool.options().seed() == 7);
  CHECK(pool.options().idle_spin() == 10us);
  CHECK(pool.options().slowdown(0).describe() == threads.slowdown(0).describe());
  CHECK(pool.options().cpu(1) == std::optional<unsigned>(0));
  CHECK(pool.options().slowdown(2).kind() == rt::Slowdown::Kind::none);
  CHECK_FALSE(pool.options().cpu(2).has_value());
}

TEST_CASE("a batch the caller would end within kCallerAloneWork runs on the caller alone",
          "[runtime][caller]") {
  constexpr std::size_t kWorkers = 3;
  rt::CallerLanePool pool(kWorkers - 1);
  auto policy = ata::make_policy("uta", kWorkers);
  rt::BatchScheduler scheduler(pool, *policy);
  const auto empty = [](const rt::TaskContext& ctx) { return ctx.task(); };
  // The first batch teaches the caller lane's mean: its quotas are UTA's.
  auto first = scheduler.run(6, empty);
  check_exactly_once(first.values, first.report, 6);
  CHECK(first.report.allocation[0] == 2);
  const double alone =
      std::chrono::duration<double>(rt::CallerLanePool::kCallerAloneWork).count();
  // Small enough by the learned mean: empty tasks take nanoseconds, once the first (cold)
  // ones are outweighed.
  const auto small_batch = [&] {
    return static_cast<std::size_t>(std::min(64.0, alone / policy->stats(kWorkers - 1).mean()));
  };
  for (int warm_up = 0; warm_up < 200 && small_batch() < 2; ++warm_up) scheduler.run(16, empty);
  const std::size_t batch = small_batch();
  REQUIRE(batch >= 2);
  auto [values, report] = scheduler.run(batch, empty);
  check_exactly_once(values, report, batch);
  CHECK(report.allocation[kWorkers - 1] == batch);
  for (const rt::TaskRecord& record : report.tasks) CHECK(record.worker == kWorkers - 1);

  // Tasks of a millisecond: B = 6 is 300 times too much for the caller alone.
  const auto slow = [](const rt::TaskContext& ctx) {
    std::this_thread::sleep_for(1ms);
    return ctx.task();
  };
  scheduler.run(6, slow);  // learns the new mean
  auto spread = scheduler.run(6, slow);
  check_exactly_once(spread.values, spread.report, 6);
  CHECK(spread.report.allocation[kWorkers - 1] < 6);
}

TEST_CASE("the caller takes over the rest of a chunk whose lane stalled in it",
          "[runtime][caller][stragglers]") {
  // Worker 0 is the pool's one thread, worker 1 the caller lane. Once the means are learned,
  // worker 0 runs its share in chunks of several empty tasks; it stalls in the second task
  // of its first chunk (as a thread that lost its core) until every other task has run. Only
  // the caller can run the rest of that chunk, and the stalled task ends without a timeout.
  rt::CallerLanePool pool(1);
  auto policy = ata::make_policy("uta", 2);
  // Whatever the backups: the caller takes over from a lane that stalled.
  const bool backups = GENERATE(true, false);
  CAPTURE(backups);
  rt::BatchScheduler scheduler(pool, *policy,
                               backups ? rt::SchedulerOptions{} : ata::testing::without_backups());
  constexpr std::size_t kBatch = 4096;
  std::atomic<bool> lane_started = false;
  // The caller's tasks wait (a second at most) until worker 0 has started the batch: else the
  // caller may take worker 0's whole share over while its thread wakes up.
  const auto wait_for_lane = [&] {
    const auto give_up = std::chrono::steady_clock::now() + 1s;
    while (!lane_started.load() && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::yield();
    }
  };
  const auto empty = [&](const rt::TaskContext& ctx) {
    if (ctx.worker() == 0) {
      lane_started = true;
    } else {
      wait_for_lane();
    }
    return ctx.task();
  };
  // Chunks of 2 tasks or more (Batch::kChunkSpan, 20 us, over the mean), hundreds when quiet:
  // the stall is in a chunk's second task, and sanitizer builds on a loaded machine run empty
  // tasks slower than 4 to a chunk.
  const auto chunked = [&] { return policy->stats(0).mean() < 10e-6; };
  for (int warm_up = 0; warm_up < 10 || (warm_up < 100 && !chunked()); ++warm_up) {
    lane_started = false;
    scheduler.run(kBatch, empty);
  }
  REQUIRE(chunked());

  lane_started = false;
  std::atomic<bool> stalled = false;
  std::atomic<std::size_t> ended = 0;
  std::atomic<bool> timed_out = false;
  const auto task = [&](const rt::TaskContext& ctx) {
    if (ctx.worker() == 0) {
      if (lane_started.exchange(true) && !stalled.exchange(true)) {
        const auto give_up = std::chrono::steady_clock::now() + 10s;
        // Deaf to its stop request: a thread without a core cannot hear one either.
        while (ended.load() < kBatch - 1) {
          if (std::chrono::steady_clock::now() > give_up) {
            timed_out = true;
            break;
          }
          std::this_thread::sleep_for(100us);
        }
      }
    } else {
      wait_for_lane();
    }
    ++ended;
    return ctx.task();
  };
  auto [values, report] = scheduler.run(kBatch, task);
  check_exactly_once(values, report, kBatch);
  CHECK(stalled.load());
  CHECK_FALSE(timed_out.load());
}

TEST_CASE("a waiting caller is summoned to run a backup copy", "[runtime][caller][stragglers]") {
  // Worker 0 is the pool's one thread, worker 1 the caller lane. Worker 0's task hangs (until
  // stopped) once the spike is armed; the caller, done with its own task, waits, and is
  // summoned to copy it.
  rt::CallerLanePool pool(1);
  ata::FixedPlanPolicy even(
      "even", ata::Plan::quotas(ata::Allocation(std::vector<std::size_t>{2, 2})));
  rt::BatchScheduler scheduler(pool, even);  // the default backups: copies
  std::atomic<bool> spike = false;
  const auto task = [&](const rt::TaskContext& ctx) {
    if (ctx.worker() == 0 && ctx.task() == 0 && spike.exchange(false)) {
      ata::testing::nap(ctx, 20s);  // ends early on its stop request
    } else {
      ata::testing::nap(ctx, 2ms);
    }
    return ctx.task();
  };
  for (int warm_up = 0; warm_up < 3; ++warm_up) scheduler.run(4, task);
  spike = true;
  const auto started = std::chrono::steady_clock::now();
  auto [values, report] = scheduler.run(4, task);
  const auto took = std::chrono::steady_clock::now() - started;
  check_exactly_once(values, report, 4);
  CHECK(report.backup_copies == 1);
  // Task 0's result came from the caller's copy, and the hung copy was stopped for it.
  for (const rt::TaskRecord& record : report.tasks) {
    if (record.task == 0 && record.accepted) CHECK(record.worker == 1);
  }
  CHECK(took < 20s);
}

namespace {

// Cycles through plans of every shape, so that each batch plans into what the last left.
class ShapeCyclingPolicy final : public ata::Policy {
 public:
  ShapeCyclingPolicy() : Policy(2) {}
  [[nodiscard]] std::string_view name() const noexcept override { return "shape-cycling"; }
  [[nodiscard]] bool needs_every_sample() const noexcept override { return false; }

 private:
  void choose_plan(std::size_t batch, ata::Plan& out) override {
    const ata::Allocation halves(std::vector<std::size_t>{batch / 2, batch - batch / 2});
    switch (round() % 4) {
      case 1:
        out = ata::Plan::quotas(halves);
        break;
      case 2:
        out = ata::Plan::race(2, ata::RaceKind::fungible);
        break;
      case 3:  // tracked: retries and restart budgets that never fire
        out = ata::Plan::quotas(halves).set_retries(1).set_restart_after(0, 60.0);
        break;
      default:
        out = ata::Plan::race(2, ata::RaceKind::indexed);
    }
  }
};

}  // namespace

TEST_CASE("batches of every size and shape back to back leave nothing to the next",
          "[runtime][caller]") {
  const bool caller_lane = GENERATE(true, false);
  CAPTURE(caller_lane);
  std::unique_ptr<rt::Lanes> pool;
  if (caller_lane) {
    pool = std::make_unique<rt::CallerLanePool>(1);
  } else {
    pool = std::make_unique<rt::WorkerPool>(2);
  }
  ShapeCyclingPolicy policy;
  rt::BatchScheduler scheduler(*pool, policy, ata::testing::without_backups());
  const std::size_t sizes[] = {2, 64, 5, 1, 33, 2, 17};
  // Nothing stops these batches before their results are in, but a fungible race stops its
  // surplus at its B-th result: a batch that reused that stop source would show it here.
  constexpr std::size_t kStopped = std::numeric_limits<std::size_t>::max();
  const auto task = [](const rt::TaskContext& ctx) {
    return ctx.stop_requested() ? kStopped : ctx.task();
  };
  for (std::size_t round = 1; round <= 28; ++round) {
    const std::size_t batch = sizes[round % std::size(sizes)];
    const bool fungible = round % 4 == 2;
    CAPTURE(round, batch);
    const auto before = std::chrono::steady_clock::now();
    // Options that differ from batch to batch: a deadline, or none.
    const auto deadline = round % 3 == 0 ? std::chrono::nanoseconds(60s) : 0ns;
    auto [values, report] = scheduler.run(batch, task, rt::BatchOptions{.deadline = deadline});
    const auto after = std::chrono::steady_clock::now();
    CHECK(report.round == round);
    CHECK(report.dispatch == (round % 2 == 1 ? ata::Dispatch::allocated
                              : fungible     ? ata::Dispatch::greedy
                                             : ata::Dispatch::pull));
    CHECK(report.allocation.size() == 2);
    CHECK(report.allocation.total() == batch);
    // The caller may take over another lane's quota, or be given a small batch alone.
    const bool as_planned = round % 2 == 1 && !caller_lane;
    if (as_planned) CHECK(report.allocation[1] == batch - batch / 2);
    REQUIRE(report.busy.size() == 2);
    if (!caller_lane) CHECK(report.takeovers == 0);
    CHECK(report.backup_copies == 0);
    CHECK(report.retries == 0);
    CHECK(report.restarts == 0);
    CHECK_FALSE(report.learning_error);
    CHECK(report.start >= before);
    CHECK(report.wall > 0ns);
    CHECK(report.wall <= after - before);
    REQUIRE(values.size() == batch);
    std::size_t accepted = 0;
    std::chrono::nanoseconds busy[2] = {};
    for (std::size_t k = 0; k < report.tasks.size(); ++k) {
      const rt::TaskRecord& record = report.tasks[k];
      REQUIRE(record.worker < 2);
      busy[record.worker] += record.duration;
      CHECK(record.has_start());
      CHECK(report.start + record.start <= after);
      accepted += record.accepted ? 1 : 0;
      if (fungible) continue;
      // Quotas and an indexed race: tasks[j] is task j's accepted copy, none discarded.
      CHECK(record.task == k);
      CHECK(record.accepted);
      CHECK(values[k] == k);
      if (as_planned) CHECK(record.worker == (k < batch / 2 ? 0U : 1U));
    }
    CHECK(accepted == batch);
    CHECK(report.tasks.size() >= batch);
    CHECK(busy[0] == report.busy[0]);
    CHECK(busy[1] == report.busy[1]);
  }
}

// A policy's plan on threads (issue 20): the plan's own hedging, retries and restart budgets
// run as the simulator runs them; what the thread runtime cannot run is refused by name.

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <stdexcept>
#include <stop_token>
#include <thread>
#include <utility>
#include <vector>

#include "ata/ata.hpp"
#include "support/eventually.hpp"
#include "support/exactly_once.hpp"
#include "support/nap.hpp"
#include "support/without_backups.hpp"

using namespace std::chrono_literals;
namespace rt = ata::runtime;
using ata::testing::check_exactly_once;
using ata::testing::nap;

namespace {

ata::Plan even_quotas(std::size_t workers, std::size_t each) {
  return ata::Plan::quotas(ata::Allocation(std::vector<std::size_t>(workers, each)));
}

}  // namespace

TEST_CASE("a plan's own hedging runs on threads, overriding the scheduler's backups",
          "[runtime][plan][stragglers]") {
  constexpr std::size_t kWorkers = 4;
  constexpr std::size_t kEach = 4;
  constexpr std::size_t kBatch = kWorkers * kEach;
  rt::WorkerPool pool(kWorkers);
  std::atomic<bool> spike{false};
  // Worker 0's first task of the batch takes 50x its usual time once the spike is armed.
  const auto task = [&](const rt::TaskContext& ctx) {
    nap(ctx, ctx.worker() == 0 && ctx.task() == 0 && spike.exchange(false) ? 100ms : 2ms);
    return ctx.task();
  };

  SECTION("hedged quotas get backup copies with the scheduler's backups off") {
    // Backup copies only, so that the copy of the spiking task is what the batch must do.
    ata::FixedPlanPolicy policy(
        "hedged", even_quotas(kWorkers, kEach)
                      .set_backups(ata::BackupOptions{}.set_mode(ata::BackupMode::copies)));
    rt::BatchScheduler scheduler(pool, policy, ata::testing::without_backups());
    for (int warm_up = 0; warm_up < 2; ++warm_up) scheduler.run(kBatch, task);
    spike = true;
    auto [values, report] = scheduler.run(kBatch, task);
    check_exactly_once(values, report, kBatch);
    CHECK(report.backup_copies >= 1);
    CHECK(report.takeovers == 0);
    CHECK(report.discarded() >= 1);  // the copy that lost
    std::lock_guard lock(policy.mutex());
    CHECK(policy.stats(0).censored_count() + policy.stats(1).censored_count() +
              policy.stats(2).censored_count() + policy.stats(3).censored_count() >=
          1);
  }

  SECTION("a plan with hedging disabled gets none, with the scheduler's backups on") {
    ata::FixedPlanPolicy policy(
        "unhedged", even_quotas(kWorkers, kEach)
                        .set_backups(ata::BackupOptions{}.set_mode(ata::BackupMode::off)));
    rt::BatchScheduler scheduler(
        pool, policy,
        rt::SchedulerOptions{}.set_backups(ata::BackupOptions{}.set_mode(ata::BackupMode::on)));
    for (int warm_up = 0; warm_up < 2; ++warm_up) scheduler.run(kBatch, task);
    spike = true;
    auto [values, report] = scheduler.run(kBatch, task);
    check_exactly_once(values, report, kBatch);
    CHECK(report.backup_copies == 0);
    CHECK(report.takeovers == 0);
    CHECK(report.discarded() == 0);
    CHECK(report.allocation == policy.plan(kBatch).quotas());
    for (std::size_t j = 0; j < kBatch; ++j) CHECK(report.tasks[j].worker == j / kEach);
  }
}

TEST_CASE("a plan's own retries run on threads, overriding the scheduler's",
          "[runtime][plan][errors]") {
  constexpr std::size_t kWorkers = 3;
  constexpr std::size_t kBatch = 12;
  rt::WorkerPool pool(kWorkers);
  std::vector<std::atomic<int>> attempts(kBatch);
  // Every third task throws on its first attempt.
  const auto flaky = [&](const rt::TaskContext& ctx) {
    if (attempts[ctx.task()]++ == 0 && ctx.task() % 3 == 0) throw std::runtime_error("flaky");
    return ctx.task();
  };

  SECTION("retries in the plan, none in the scheduler: failed attempts run again") {
    ata::FixedPlanPolicy policy("retried", even_quotas(kWorkers, kBatch / kWorkers).set_retries(1));
    rt::BatchScheduler scheduler(pool, policy, ata::testing::without_backups());
    auto [values, report] = scheduler.run(kBatch, flaky);
    check_exactly_once(values, report, kBatch);
    CHECK(report.retries == kBatch / 3);
    CHECK(report.backup_copies == 0);
  }

  SECTION("no retries in the plan, some in the scheduler: the first exception fails the batch") {
    ata::FixedPlanPolicy policy("unretried",
                                even_quotas(kWorkers, kBatch / kWorkers).set_retries(0));
    rt::BatchScheduler scheduler(pool, policy, ata::testing::without_backups().set_retries(2));
    CHECK_THROWS_WITH(scheduler.run(kBatch, flaky), "flaky");
  }
}

TEST_CASE("quotas with a fungible race: each quota at most its samples, racers until B",
          "[runtime][plan]") {
  // Worker 0 holds a quota of 2 and sleeps, so that the racer (worker 1) gives most results;
  // worker 2 has a quota of 1 and is fast. The batch ends at B results, whoever gave them.
  constexpr std::size_t kWorkers = 3;
  constexpr std::size_t kBatch = 6;
  rt::WorkerPool pool(kWorkers);
  ata::FixedPlanPolicy policy(
      "mixed", ata::Plan(kWorkers).set_quota(0, 2).set_quota(2, 1).set_racer(1).set_race_kind(
                   ata::RaceKind::fungible));
  rt::BatchScheduler scheduler(pool, policy, ata::testing::without_backups());
  for (int round = 0; round < 5; ++round) {
    auto [values, report] = scheduler.run(kBatch, [](const rt::TaskContext& ctx) {
      if (ctx.worker() == 0) (void)nap(ctx, 2ms);
      return std::pair{ctx.worker(), ctx.task()};
    });
    CHECK(report.dispatch == ata::Dispatch::mixed);
    REQUIRE(values.size() == kBatch);
    std::vector<std::size_t> ran(kWorkers, 0);
    for (const auto& record : report.tasks) {
      ++ran[record.worker];
      // The quotas number their samples 0..2 (worker 0: 0 and 1, worker 2: 2), the race after.
      if (record.worker == 0) CHECK(record.task < 2);
      if (record.worker == 2) CHECK(record.task == 2);
      if (record.worker == 1) CHECK(record.task >= 3);
    }
    CHECK(ran[0] <= 2);
    CHECK(ran[2] <= 1);
    CHECK(report.allocation.total() == kBatch);
    // Each value is its sample's, in sample-number order.
    for (std::size_t m = 1; m < values.size(); ++m) CHECK(values[m - 1].second < values[m].second);
    for (const auto& [worker, task] : values) {
      CHECK(std::any_of(report.tasks.begin(), report.tasks.end(), [&](const auto& record) {
        return record.worker == worker && record.task == task && record.accepted;
      }));
    }
  }
}

TEST_CASE("what a plan sets to nothing runs on threads, never refused", "[runtime][plan]") {
  constexpr std::size_t kWorkers = 2;
  constexpr std::size_t kBatch = 4;
  rt::WorkerPool pool(kWorkers);
  const auto task = [](const rt::TaskContext& ctx) { return ctx.task(); };
  // What a plan sets to nothing runs: backups off in an indexed race, no retries of a race,
  // and a fungible race's backups, which (as in the simulator) add nothing to a race of
  // interchangeable tasks.
  for (ata::Plan plan : {ata::Plan::race(kWorkers, ata::RaceKind::indexed)
                             .set_backups(ata::BackupOptions{}.set_mode(ata::BackupMode::off)),
                         ata::Plan::race(kWorkers, ata::RaceKind::indexed).set_retries(0),
                         ata::Plan::race(kWorkers, ata::RaceKind::fungible)
                             .set_backups(ata::BackupOptions{}.set_mode(ata::BackupMode::on))}) {
    ata::FixedPlanPolicy policy("fixed", plan);
    rt::BatchScheduler scheduler(pool, policy, ata::testing::without_backups());
    auto [values, report] = scheduler.run(kBatch, task);
    CHECK(values.size() == kBatch);
  }
}

TEST_CASE("a race's retries run on threads: indexed, mixed and fungible",
          "[runtime][plan][errors]") {
  constexpr std::size_t kWorkers = 2;
  constexpr std::size_t kBatch = 6;
  rt::WorkerPool pool(kWorkers);
  std::vector<std::atomic<int>> attempts(kBatch);
  // Task 1 throws on its first attempt.
  const auto flaky = [&](const rt::TaskContext& ctx) {
    if (ctx.task() < kBatch && attempts[ctx.task()]++ == 0 && ctx.task() == 1) {
      throw std::runtime_error("flaky");
    }
    return ctx.task();
  };
  SECTION("an indexed race and quotas with an indexed race: task 1 runs again") {
    for (ata::Plan plan : {ata::Plan::race(kWorkers, ata::RaceKind::indexed).set_retries(1),
                           ata::Plan(kWorkers).set_quota(0, 2).set_racer(1).set_retries(1)}) {
      for (auto& a : attempts) a = 0;
      ata::FixedPlanPolicy policy("retried", plan);
      rt::BatchScheduler scheduler(pool, policy, ata::testing::without_backups());
      auto [values, report] = scheduler.run(kBatch, flaky);
      check_exactly_once(values, report, kBatch);
      CHECK(report.retries == 1);
      CHECK(attempts[1] == 2);
    }
  }
  SECTION("the scheduler's retries fill an indexed race that sets none") {
    ata::FixedPlanPolicy policy("race", ata::Plan::race(kWorkers, ata::RaceKind::indexed));
    rt::BatchScheduler scheduler(pool, policy, ata::testing::without_backups().set_retries(1));
    auto [values, report] = scheduler.run(kBatch, flaky);
    check_exactly_once(values, report, kBatch);
    CHECK(report.retries == 1);
  }
  SECTION("a fungible race replaces a failed task with a new one, while retries x B last") {
    std::atomic<int> failures = 0;
    // Every task fails until `kFailing` have; B results then come from later tasks. One
    // racer, so that no failure ends after the B-th result (it would be surplus, uncounted).
    constexpr int kFailing = 3;
    const auto failing_first = [&](const rt::TaskContext& ctx) {
      if (failures++ < kFailing) throw std::runtime_error("failing");
      return ctx.task();
    };
    const std::vector<std::size_t> one_racer{1};
    ata::FixedPlanPolicy policy("race",
                                ata::Plan::race(kWorkers, one_racer, ata::RaceKind::fungible));
    SECTION("retries 1: up to B failures pass") {
      rt::BatchScheduler scheduler(pool, policy, ata::testing::without_backups().set_retries(1));
      auto [values, report] = scheduler.run(kBatch, failing_first);
      CHECK(values.size() == kBatch);
      CHECK(report.retries == static_cast<std::size_t>(kFailing));
      CHECK(report.allocation.total() == kBatch);
    }
    SECTION("retries 0: the first failure fails the batch") {
      rt::BatchScheduler scheduler(pool, policy, ata::testing::without_backups());
      CHECK_THROWS_WITH(scheduler.run(kBatch, failing_first), "failing");
    }
    SECTION("a task that always fails fails the batch at the (retries x B + 1)-th failure") {
      rt::BatchScheduler scheduler(pool, policy, ata::testing::without_backups().set_retries(2));
      CHECK_THROWS_WITH(scheduler.run(kBatch,
                                      [&](const rt::TaskContext&) -> std::size_t {
                                        ++failures;
                                        throw std::runtime_error("always");
                                      }),
                        "always");
      CHECK(failures == static_cast<int>(2 * kBatch + 1));
    }
  }
}

TEST_CASE("a fungible race's copies still running at its B-th result are censored observations",
          "[runtime][plan]") {
  // As in the simulator: the race stops them, and each ran at least until the B-th result.
  constexpr std::size_t kBatch = 8;
  rt::WorkerPool pool(2);
  ata::FixedPlanPolicy policy("race", ata::Plan::race(2, ata::RaceKind::fungible));
  rt::BatchScheduler scheduler(pool, policy, ata::testing::without_backups());
  std::atomic<bool> slow_started{false};
  std::atomic<int> slow_copies{0};
  const auto started = std::chrono::steady_clock::now();
  auto [values, report] = scheduler.run(kBatch, [&](const rt::TaskContext& ctx) {
    if (ctx.worker() == 1) {
      ++slow_copies;
      slow_started = true;
      (void)nap(ctx, 30s);  // ends by the race's stop
    } else {
      // Worker 0 gives every result, once worker 1's copy runs.
      (void)ata::testing::eventually([&] { return slow_started.load(); });
    }
    return ctx.task();
  });
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  CHECK(values.size() == kBatch);
  std::lock_guard lock(policy.mutex());
  // Worker 1 ran one copy, stopped: censored, never a complete time.
  CHECK(slow_copies == 1);
  CHECK(policy.stats(1).count() == 0);
  CHECK(policy.stats(1).censored_count() == 1);
  CHECK(policy.stats(1).censored_sum() > 0.0);
  CHECK(policy.stats(1).censored_sum() <= elapsed);
  CHECK(policy.stats(0).count() == kBatch);
}

TEST_CASE("a plan's restart budgets stop a copy, censor it and start the task afresh there",
          "[runtime][plan][restarts]") {
  constexpr std::size_t kWorkers = 2;
  constexpr std::size_t kEach = 3;
  constexpr std::size_t kBatch = kWorkers * kEach;
  rt::WorkerPool pool(kWorkers);
  std::vector<std::atomic<int>> attempts(kBatch);

  SECTION("a first attempt that waits for its stop is restarted once, on its own worker") {
    // Only worker 0 has a budget; its first attempts would wait for ever but for the restart.
    ata::FixedPlanPolicy policy("restarted",
                                even_quotas(kWorkers, kEach).set_restart_after(0, 0.05));
    // No backup copy: the restart alone must bring the result.
    rt::BatchScheduler scheduler(pool, policy, ata::testing::without_backups());
    auto [values, report] = scheduler.run(kBatch, [&](const rt::TaskContext& ctx) {
      if (attempts[ctx.task()]++ == 0 && ctx.worker() == 0) nap(ctx, 20s);  // until stopped
      return ctx.task();
    });
    check_exactly_once(values, report, kBatch);
    CHECK(report.restarts == kEach);
    CHECK(report.discarded() == kEach);
    CHECK(report.backup_copies == 0);
    for (std::size_t j = 0; j < kBatch; ++j) {
      CHECK(attempts[j] == (j < kEach ? 2 : 1));
      CHECK(report.tasks[j].worker == j / kEach);  // restarted where it ran
    }
    for (std::size_t k = kBatch; k < report.tasks.size(); ++k) {
      CHECK(report.tasks[k].worker == 0);
      CHECK_FALSE(report.tasks[k].accepted);
    }
    std::lock_guard lock(policy.mutex());
    CHECK(policy.stats(0).censored_count() == kEach);
    CHECK(policy.stats(1).censored_count() == 0);
    CHECK(policy.stats(0).count() == kEach);  // the accepted attempts
  }

  SECTION("a copy that ignores its stop is waited for and its late result discarded") {
    ata::FixedPlanPolicy policy(
        "restarted",
        even_quotas(kWorkers, kEach).set_restart_after(0, 0.05).set_restart_after(1, 0.05));
    // No backup copy: the restarts alone.
    rt::BatchScheduler scheduler(pool, policy, ata::testing::without_backups());
    std::atomic<bool> late_running{false};
    auto [values, report] = scheduler.run(kBatch, [&](const rt::TaskContext& ctx) {
      if (ctx.task() % kEach == 0 && attempts[ctx.task()]++ == 0) {
        late_running = true;
        std::this_thread::sleep_for(150ms);  // ignores its stop request
        late_running = false;
        return ctx.task() + 1000;  // a wrong value, to be discarded
      }
      return ctx.task();
    });
    CHECK_FALSE(late_running.load());  // run() waited for it
    check_exactly_once(values, report, kBatch);
    CHECK(report.restarts == kWorkers);
    CHECK(report.discarded() == kWorkers);
    std::lock_guard lock(policy.mutex());
    CHECK(policy.stats(0).censored_count() == 1);
    CHECK(policy.stats(1).censored_count() == 1);
  }

  SECTION("restarts and hedging together: every index once, and run() returns") {
    ata::FixedPlanPolicy policy(
        "both", even_quotas(kWorkers, kEach)
                    .set_restart_after(0, 0.005)
                    .set_backups(ata::BackupOptions{}.set_mode(ata::BackupMode::on)));
    rt::BatchScheduler scheduler(pool, policy, ata::testing::without_backups());
    for (int round = 0; round < 3; ++round) {
      for (auto& a : attempts) a = 0;
      auto [values, report] = scheduler.run(kBatch, [&](const rt::TaskContext& ctx) {
        if (attempts[ctx.task()]++ == 0 && ctx.worker() == 0) nap(ctx, 20s);
        return ctx.task();
      });
      check_exactly_once(values, report, kBatch);
      CHECK(report.restarts + report.takeovers + report.backup_copies >= 1);
    }
  }
}

TEST_CASE("an indexed race's hedging runs on threads: free racers back up an overdue task",
          "[runtime][plan][stragglers]") {
  constexpr std::size_t kWorkers = 4;
  constexpr std::size_t kBatch = 16;
  rt::WorkerPool pool(kWorkers);
  std::atomic<bool> spike{false};
  // Task 0's first copy of the batch takes 50x the usual time once the spike is armed.
  const auto task = [&](const rt::TaskContext& ctx) {
    nap(ctx, ctx.task() == 0 && spike.exchange(false) ? 5s : 2ms);
    return ctx.task();
  };
  const auto hedged_race = [] {
    return ata::Plan::race(kWorkers, ata::RaceKind::indexed)
        .set_backups(ata::BackupOptions{}.set_mode(ata::BackupMode::on));
  };

  SECTION("the plan's hedging, with the scheduler's backups off") {
    ata::FixedPlanPolicy policy("hedged pull", hedged_race());
    rt::BatchScheduler scheduler(pool, policy, ata::testing::without_backups());
    for (int warm_up = 0; warm_up < 2; ++warm_up) {
      auto [values, report] = scheduler.run(kBatch, task);
      check_exactly_once(values, report, kBatch);
      CHECK(report.allocation.total() == kBatch);
    }
    spike = true;
    auto [values, report] = scheduler.run(kBatch, task);
    check_exactly_once(values, report, kBatch);
    CHECK(report.dispatch == ata::Dispatch::pull);
    CHECK(report.backup_copies >= 1);
    CHECK(report.takeovers == 0);  // a race has no shares to take over
    CHECK(report.allocation.total() == kBatch);
    CHECK(report.discarded() >= 1);
    std::size_t censored = 0;
    std::lock_guard lock(policy.mutex());
    for (std::size_t i = 0; i < kWorkers; ++i) censored += policy.stats(i).censored_count();
    CHECK(censored >= 1);
  }

  SECTION("the scheduler's backups fill a plan that leaves hedging unset") {
    ata::FixedPlanPolicy policy("pull", ata::Plan::race(kWorkers, ata::RaceKind::indexed));
    rt::BatchScheduler scheduler(
        pool, policy,
        rt::SchedulerOptions{}.set_backups(ata::BackupOptions{}.set_mode(ata::BackupMode::copies)));
    for (int warm_up = 0; warm_up < 2; ++warm_up) scheduler.run(kBatch, task);
    spike = true;
    auto [values, report] = scheduler.run(kBatch, task);
    check_exactly_once(values, report, kBatch);
    CHECK(report.backup_copies >= 1);
  }

  SECTION("a plan with hedging disabled gets none, with the scheduler's backups on") {
    ata::FixedPlanPolicy policy(
        "unhedged pull", ata::Plan::race(kWorkers, ata::RaceKind::indexed)
                             .set_backups(ata::BackupOptions{}.set_mode(ata::BackupMode::off)));
    rt::BatchScheduler scheduler(
        pool, policy,
        rt::SchedulerOptions{}.set_backups(ata::BackupOptions{}.set_mode(ata::BackupMode::on)));
    const auto quick = [](const rt::TaskContext& ctx) { return ctx.task(); };
    auto [values, report] = scheduler.run(kBatch, quick);
    check_exactly_once(values, report, kBatch);
    CHECK(report.backup_copies == 0);
    CHECK(report.discarded() == 0);
  }
}

TEST_CASE("an indexed race's restart budgets run on threads", "[runtime][plan][restarts]") {
  constexpr std::size_t kWorkers = 2;
  constexpr std::size_t kBatch = 6;
  rt::WorkerPool pool(kWorkers);
  std::vector<std::atomic<int>> attempts(kBatch);
  ata::FixedPlanPolicy policy("restarted pull", ata::Plan::race(kWorkers, ata::RaceKind::indexed)
                                                    .set_restart_after(0, 0.05)
                                                    .set_restart_after(1, 0.05));
  // No backup copy: the restarts alone must bring the results.
  rt::BatchScheduler scheduler(pool, policy, ata::testing::without_backups());
  // Every first attempt waits for its stop; every second returns at once.
  auto [values, report] = scheduler.run(kBatch, [&](const rt::TaskContext& ctx) {
    if (attempts[ctx.task()]++ == 0) nap(ctx, 20s);
    return ctx.task();
  });
  check_exactly_once(values, report, kBatch);
  CHECK(report.dispatch == ata::Dispatch::pull);
  CHECK(report.restarts == kBatch);
  CHECK(report.discarded() == kBatch);
  for (std::size_t j = 0; j < kBatch; ++j) CHECK(attempts[j] == 2);
  // Each restarted on the worker it was stopped on.
  for (std::size_t k = kBatch; k < report.tasks.size(); ++k) {
    CHECK(report.tasks[k].worker == report.tasks[report.tasks[k].task].worker);
  }
  std::lock_guard lock(policy.mutex());
  CHECK(policy.stats(0).censored_count() + policy.stats(1).censored_count() == kBatch);
}

TEST_CASE("a fungible race's restart budgets run on threads: a sample past its budget is "
          "stopped, censored and replaced",
          "[runtime][plan][restarts]") {
  constexpr std::size_t kWorkers = 2;
  constexpr std::size_t kBatch = 6;
  rt::WorkerPool pool(kWorkers);
  std::vector<std::atomic<int>> samples(kWorkers);
  const auto restarted = [](const rt::RoundReport& report, std::size_t worker) {
    return std::count_if(report.tasks.begin(), report.tasks.end(), [&](const rt::TaskRecord& r) {
      return !r.accepted && r.worker == worker && r.duration >= 5ms;
    });
  };

  SECTION("every racer's first sample waits for a stop that only its budget sends") {
    ata::FixedPlanPolicy policy("restarted race",
                                ata::Plan::race(kWorkers, ata::RaceKind::fungible)
                                    .set_restart_after(0, 0.005)
                                    .set_restart_after(1, 0.005));
    rt::BatchScheduler scheduler(pool, policy, ata::testing::without_backups());
    // No result comes before both first samples were stopped (a racer may start late).
    std::atomic<std::size_t> firsts_stopped = 0;
    auto [values, report] = scheduler.run(kBatch, [&](const rt::TaskContext& ctx) {
      if (samples[ctx.worker()]++ == 0) {
        nap(ctx, 20s);
        firsts_stopped.fetch_add(1);
      } else {
        (void)ata::testing::eventually([&] { return firsts_stopped.load() == kWorkers; }, 20s);
      }
      return ctx.worker();
    });
    CHECK(firsts_stopped.load() == kWorkers);
    CHECK(values.size() == kBatch);
    CHECK(report.dispatch == ata::Dispatch::greedy);
    CHECK(report.allocation.total() == kBatch);
    // A later sample of microseconds may pass 5 ms too on a loaded machine: at least these.
    CHECK(report.restarts >= kWorkers);
    CHECK(restarted(report, 0) >= 1);
    CHECK(restarted(report, 1) >= 1);
    std::lock_guard lock(policy.mutex());
    for (std::size_t w = 0; w < kWorkers; ++w) {
      CHECK(policy.stats(w).censored_count() >= 1);
      CHECK(policy.stats(w).count() == report.allocation[w]);  // the restarted are not complete
    }
  }

  SECTION("a racer without a budget runs on until the B-th result stops it") {
    ata::FixedPlanPolicy policy("one budget", ata::Plan::race(kWorkers, ata::RaceKind::fungible)
                                                  .set_restart_after(0, 0.005));
    rt::BatchScheduler scheduler(pool, policy, ata::testing::without_backups());
    std::atomic<bool> stopped_by_batch = false;
    auto [values, report] = scheduler.run(kBatch, [&](const rt::TaskContext& ctx) {
      if (ctx.worker() == 1) {
        nap(ctx, 20s);  // never within a budget: stopped only by the end of the race
        stopped_by_batch = ctx.stop_requested();
      } else if (samples[0]++ == 0) {
        nap(ctx, 20s);
      }
      return ctx.worker();
    });
    CHECK(values.size() == kBatch);
    CHECK(report.allocation[0] == kBatch);
    CHECK(report.restarts >= 1);
    CHECK(restarted(report, 0) >= 1);
    CHECK(stopped_by_batch.load());  // run() returns once every racer has left
    std::lock_guard lock(policy.mutex());
    CHECK(policy.stats(1).censored_count() == 1);  // its one sample, cut by the B-th result
  }
}

TEST_CASE("quotas with a fungible race restart a quota's sample under its own number",
          "[runtime][plan][restarts]") {
  // As the simulator does: a restarted sample is run afresh, so a quota counts the samples
  // that ran to their end (or to the B-th result), not the attempts.
  constexpr std::size_t kWorkers = 2;
  constexpr std::size_t kBatch = 6;
  rt::WorkerPool pool(kWorkers);
  ata::FixedPlanPolicy policy("mixed restarts", ata::Plan(kWorkers)
                                                    .set_quota(0, 2)
                                                    .set_racer(1)
                                                    .set_race_kind(ata::RaceKind::fungible)
                                                    .set_restart_after(0, 0.005));
  rt::BatchScheduler scheduler(pool, policy, ata::testing::without_backups());
  std::atomic<int> attempts_on_0 = 0;
  auto [values, report] = scheduler.run(kBatch, [&](const rt::TaskContext& ctx) {
    if (ctx.worker() == 0) {
      if (attempts_on_0++ == 0) nap(ctx, 20s);  // only its budget stops it
    } else {
      // The racer gives nothing before worker 0 has started its second attempt.
      (void)ata::testing::eventually([&] { return attempts_on_0.load() >= 2; }, 20s);
    }
    return ctx.task();
  });
  CHECK(values.size() == kBatch);
  CHECK(report.dispatch == ata::Dispatch::mixed);
  CHECK(report.restarts >= 1);
  std::vector<rt::TaskRecord> zeros;
  for (const auto& record : report.tasks) {
    if (record.task == 0) zeros.push_back(record);
    if (record.worker == 1) CHECK(record.task >= 2);
    if (record.worker == 0) CHECK(record.task < 2);
  }
  // Sorted by number, then start: the restarted attempt, then the fresh one.
  REQUIRE(zeros.size() >= 2);
  CHECK(zeros[0].worker == 0);
  CHECK_FALSE(zeros[0].accepted);
  CHECK(zeros[0].duration >= 5ms);
  CHECK(zeros[1].worker == 0);
  CHECK(zeros[1].start >= zeros[0].start);
}

TEST_CASE("a budget every copy outlasts backs off on threads, and the batch ends",
          "[runtime][plan][restarts]") {
  // Tasks of 2 ms that ignore their stop, budgets of 50 us: without the back-off (64 restarts
  // in a row, then the budget doubles) every copy would restart forever.
  constexpr std::size_t kWorkers = 2;
  rt::WorkerPool pool(kWorkers);
  const auto fixed_length = [](const rt::TaskContext& ctx) {
    std::this_thread::sleep_for(2ms);
    return ctx.task();
  };
  const auto tight = [](ata::Plan plan) {
    return plan.set_restart_after(0, 50e-6).set_restart_after(1, 50e-6);
  };
  for (ata::Plan plan : {tight(ata::Plan::race(kWorkers, ata::RaceKind::fungible)),
                         tight(ata::Plan::race(kWorkers, ata::RaceKind::indexed)),
                         tight(ata::Plan::quotas(ata::Allocation({1, 1})))}) {
    CAPTURE(static_cast<int>(plan.dispatch()));
    ata::FixedPlanPolicy policy("tight", plan);
    rt::BatchScheduler scheduler(pool, policy, ata::testing::without_backups());
    // Quiet, 64 or more restarts per result; on a loaded machine a timer that fires after the
    // 2 ms task ended lets the copy count (1 batch in 20 beside two CPU-bound processes): up
    // to three batches. Budgets that never stop a copy fail all three.
    std::size_t restarts = 0;
    for (int attempt = 0; attempt < 3 && restarts == 0; ++attempt) {
      auto [values, report] = scheduler.run(2, fixed_length);
      CHECK(values.size() == 2);
      restarts = report.restarts;
    }
    CHECK(restarts > 0);
  }
}

TEST_CASE("quotas and an indexed race in one batch run on threads, hedged or not",
          "[runtime][plan][mixed]") {
  constexpr std::size_t kWorkers = 3;
  constexpr std::size_t kQuota = 4;
  constexpr std::size_t kBatch = 10;
  rt::WorkerPool pool(kWorkers);
  // Worker 0 runs tasks [0, 4) as its quota; workers 1 and 2 race for [4, 10).
  const auto mixed = [] {
    return ata::Plan(kWorkers).set_quota(0, kQuota).set_racer(1).set_racer(2);
  };

  SECTION("without hedging: the quota where planned, the pool to the racers") {
    ata::FixedPlanPolicy policy("mixed", mixed());
    rt::BatchScheduler scheduler(pool, policy, ata::testing::without_backups());
    for (int round = 0; round < 3; ++round) {
      auto [values, report] = scheduler.run(kBatch, [](const rt::TaskContext& ctx) {
        nap(ctx, 1ms);
        return ctx.task();
      });
      check_exactly_once(values, report, kBatch);
      CHECK(report.dispatch == ata::Dispatch::mixed);
      CHECK(report.discarded() == 0);
      CHECK(report.allocation[0] == kQuota);
      CHECK(report.allocation.total() == kBatch);
      for (std::size_t j = 0; j < kBatch; ++j) {
        CHECK((report.tasks[j].worker == 0) == (j < kQuota));
      }
    }
  }

  SECTION("with hedging: free racers help the quota worker's spiking task") {
    ata::FixedPlanPolicy policy(
        "hedged mixed", mixed().set_backups(ata::BackupOptions{}.set_mode(ata::BackupMode::on)));
    rt::BatchScheduler scheduler(pool, policy, ata::testing::without_backups());
    std::atomic<bool> spike{false};
    const auto task = [&](const rt::TaskContext& ctx) {
      nap(ctx, ctx.task() == 0 && spike.exchange(false) ? 5s : 2ms);
      return ctx.task();
    };
    for (int warm_up = 0; warm_up < 2; ++warm_up) scheduler.run(kBatch, task);
    spike = true;
    auto [values, report] = scheduler.run(kBatch, task);
    check_exactly_once(values, report, kBatch);
    CHECK(report.backup_copies + report.takeovers >= 1);
    CHECK(report.backup_copies >= 1);  // task 0 itself: nobody else finishes it
    std::lock_guard lock(policy.mutex());
    CHECK(policy.stats(0).censored_count() >= 1);
  }
}

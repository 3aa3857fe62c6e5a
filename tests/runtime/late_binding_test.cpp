// Late binding (LateBindingOptions) on WorkerPool: the rule, many
// submitters at once, the plans it binds on arrival. tests/lanes/lane_scenarios.hpp runs it on
// every kind of lanes too.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_exception.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <chrono>
#include <cstddef>
#include <atomic>
#include <future>
#include <semaphore>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "ata/ata.hpp"
#include "support/eventually.hpp"
#include "support/exactly_once.hpp"

namespace {

namespace rt = ata::runtime;
using namespace std::chrono_literals;
using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::MessageMatches;

rt::LateBindingOptions late() { return rt::LateBindingOptions{}; }

TEST_CASE("late binding puts a slow worker to work only where it saves time", "[runtime][late]") {
  rt::WorkerPool pool(rt::PoolOptions(2));
  auto policy = ata::make_policy("ata-auto", 2);
  rt::BatchScheduler scheduler(pool, *policy, late());
  const auto task = [](const rt::TaskContext& ctx) {
    std::this_thread::sleep_for(ctx.worker() == 0 ? 1ms : 20ms);
  };
  // Unmeasured, each worker takes a task at once: the two wait for each other (a lane woken
  // but slow to start, on a loaded machine, would otherwise leave its task to the other one).
  std::atomic<int> warming{0};
  (void)scheduler.run(2, [&](const rt::TaskContext& ctx) {
    ++warming;
    (void)ata::testing::eventually([&] { return warming.load() == 2; });
    task(ctx);
  });
  REQUIRE(policy->stats(1).count() == 1);
  // Worker 0 alone would take about 100 ms: worker 1 ends several tasks meanwhile, each one
  // that worker 0 would otherwise have reached last.
  const auto result = scheduler.run(100, task);
  CAPTURE(policy->stats(0).mean(), policy->stats(1).mean());
  CHECK(result.report.allocation[1] > 0);
  // Each worker's share of the time is about the same: worker 0 ends about m1 / m0 times as
  // many tasks, by the means this run measured (20 on an idle machine; a loaded one oversleeps
  // the 1 ms more, relatively, than the 20 ms). At least half of that.
  const double ratio = policy->stats(1).mean() / policy->stats(0).mean();
  CHECK(2.0 * static_cast<double>(result.report.allocation[0]) >
        ratio * static_cast<double>(result.report.allocation[1]));
  // The policy learned every task's time.
  CHECK(policy->stats(0).count() + policy->stats(1).count() == 102);
}

TEST_CASE("late binding: a task does not wait forever behind a worker stuck in a long one",
          "[runtime][late]") {
  rt::WorkerPool pool{rt::PoolOptions(2)};
  auto policy = ata::make_policy("ata-auto", 2);
  rt::BatchScheduler scheduler(pool, *policy, late());
  // Both lanes measured: the first batch's two tasks wait for each other (a lane woken but
  // slow to start, on a loaded machine, would otherwise leave its task to the other one).
  std::atomic<int> warming{0};
  (void)scheduler.run(2, [&](const rt::TaskContext&) {
    ++warming;
    (void)ata::testing::eventually([&] { return warming.load() == 2; });
  });
  for (int round = 0; round < 5; ++round) (void)scheduler.run(8, [](const rt::TaskContext&) {});
  REQUIRE(policy->stats(0).count() > 0);
  REQUIRE(policy->stats(1).count() > 0);
  // By the learned means (microseconds), the worker that starts first would end both tasks at
  // once; but its task waits until the other one has run. The parked worker must be woken
  // (by the pacer's timer: no task ends meanwhile) to take it.
  std::binary_semaphore other_ran(0);
  std::atomic<int> first{-1};
  const auto result = scheduler.run(2, [&](const rt::TaskContext& ctx) {
    int none = -1;
    if (first.compare_exchange_strong(none, static_cast<int>(ctx.task()))) {
      return other_ran.try_acquire_for(10s);
    }
    other_ran.release();
    return true;
  });
  CHECK(result.values[0]);
  CHECK(result.values[1]);
  CHECK(result.report.allocation == ata::Allocation({1, 1}));
}

TEST_CASE("late binding: many submitters, each batch one result per task index",
          "[runtime][late][stress]") {
  constexpr std::size_t kWorkers = 4;
  rt::WorkerPool pool{rt::PoolOptions(kWorkers)};
  auto policy = ata::make_policy("ata-auto", kWorkers);
  rt::BatchScheduler scheduler(pool, *policy, late().set_max_in_flight(6));
  constexpr std::size_t kSubmitters = 8;
  std::vector<std::future<std::string>> submitters;
  for (std::size_t s = 0; s < kSubmitters; ++s) {
    submitters.push_back(std::async(std::launch::async, [&, s] {
      for (std::size_t b = 0; b < 150; ++b) {
        const std::size_t batch = 1 + (b * 13 + s * 7) % 33;
        const auto result = scheduler.run(batch, [&](const rt::TaskContext& ctx) {
          // Worker 3 is slower: the rule has means to tell apart.
          if (ctx.worker() == 3) std::this_thread::sleep_for(20us);
          return ctx.task() * 3 + s;
        });
        if (result.values.size() != batch) return std::string("not B values");
        std::size_t total = 0;
        for (std::size_t k = 0; k < batch; ++k) {
          if (result.values[k] != k * 3 + s) return "wrong value at task " + std::to_string(k);
        }
        for (std::size_t i = 0; i < kWorkers; ++i) total += result.report.allocation[i];
        if (total != batch) return std::string("allocation does not sum to B");
      }
      return std::string();
    }));
  }
  for (auto& submitter : submitters) CHECK(submitter.get() == "");
  CHECK(scheduler.rounds() == kSubmitters * 150);
  CHECK(scheduler.in_flight() == 0);
}

TEST_CASE("late binding runs what its queue cannot bound on arrival: races, own backups",
          "[runtime][late]") {
  constexpr std::size_t kBatch = 6;
  rt::WorkerPool pool(rt::PoolOptions(2));
  const auto task = [](const rt::TaskContext& ctx) { return ctx.task(); };
  // A pull policy's plan races, so it has nothing to bind late: it runs as planned.
  auto pull = ata::make_policy("pull", 2);
  rt::BatchScheduler pulled(pool, *pull, late());
  const auto pulled_batch = pulled.run(kBatch, task);
  CHECK(pulled_batch.values.size() == kBatch);
  CHECK(pulled_batch.report.dispatch == ata::Dispatch::pull);

  // Quotas with retries or backups of their own bind on arrival: the plan's quotas run, and
  // so do its retries.
  std::vector<std::atomic<int>> attempts(kBatch);
  const auto flaky = [&](const rt::TaskContext& ctx) {
    if (attempts[ctx.task()]++ == 0 && ctx.task() == 4) throw std::runtime_error("flaky");
    return ctx.task();
  };
  const auto quotas = ata::Plan::quotas(ata::Allocation(std::vector<std::size_t>{4, 2}));
  ata::FixedPlanPolicy retried("retried", ata::Plan(quotas).set_retries(1));
  rt::BatchScheduler on_arrival(pool, retried, late());
  const auto [values, report] = on_arrival.run(kBatch, flaky);
  ata::testing::check_exactly_once(values, report, kBatch);
  CHECK(report.dispatch == ata::Dispatch::allocated);
  CHECK(report.retries == 1);
  // The same quotas without settings of their own are handed out one by one.
  ata::FixedPlanPolicy plain("plain", quotas);
  rt::BatchScheduler paced(pool, plain, late());
  CHECK(paced.run(kBatch, task).report.dispatch == ata::Dispatch::pull);
  CHECK(paced.rounds() == 1);
  CHECK(plain.round() == 1);
}

}  // namespace

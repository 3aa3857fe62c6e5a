#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_exception.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "ata/ata.hpp"

using Catch::Approx;
using Catch::Matchers::ContainsSubstring;
using namespace std::chrono_literals;
namespace rt = ata::runtime;

namespace {

std::unique_ptr<ata::Policy> policy_named(const std::string& name, std::size_t workers) {
  ata::PolicyOptions options;
  options.alpha = 1.0;
  options.means.assign(workers, 1.0);
  return ata::make_policy(name, workers, options);
}

}  // namespace

TEST_CASE("every mode returns B results in task-index order", "[runtime][scheduler]") {
  const std::string name = GENERATE("ata", "ata-e", "ofta", "uta", "gta", "pull");
  // Without polling, every hand-over goes through the condition variables.
  const auto spin = GENERATE(rt::PoolOptions::kDefaultIdleSpin, std::chrono::nanoseconds{0});
  constexpr std::size_t kWorkers = 3;
  rt::WorkerPool pool(rt::PoolOptions(kWorkers).set_idle_spin(spin));
  auto policy = policy_named(name, kWorkers);
  rt::BatchScheduler scheduler(pool, *policy);
  for (std::size_t batch : {1u, 2u, 7u, 64u}) {
    CAPTURE(name, spin.count(), batch);
    auto [values, report] =
        scheduler.run(batch, [](const rt::TaskContext& ctx) { return std::to_string(ctx.task()); });
    REQUIRE(values.size() == batch);
    CHECK(report.allocation.total() == batch);
    CHECK(report.dispatch == policy->dispatch());
    CHECK(report.round == scheduler.rounds());
    // Result j comes from the j-th accepted task, in task-index order.
    std::size_t j = 0;
    for (const auto& record : report.tasks) {
      if (record.accepted) CHECK(values[j++] == std::to_string(record.task));
    }
    CHECK(j == batch);
    if (policy->dispatch() != ata::Dispatch::greedy) {
      REQUIRE(report.tasks.size() == batch);
      for (std::size_t t = 0; t < batch; ++t) CHECK(values[t] == std::to_string(t));
    }
  }
}

TEST_CASE("allocated and pull modes run each of the B tasks exactly once", "[runtime][scheduler]") {
  const std::string name = GENERATE("ata-e", "uta", "pull");
  rt::WorkerPool pool(4);
  auto policy = policy_named(name, 4);
  rt::BatchScheduler scheduler(pool, *policy);
  constexpr std::size_t kBatch = 200;
  std::vector<std::atomic<int>> runs(kBatch);
  const auto result =
      scheduler.run(kBatch, [&](const rt::TaskContext& ctx) { runs[ctx.task()]++; });
  for (std::size_t t = 0; t < kBatch; ++t) CHECK(runs[t].load() == 1);
  CHECK(result.report.tasks.size() == kBatch);
  CHECK(result.report.discarded() == 0);
}

TEST_CASE("allocated mode gives worker i the policy's a_i tasks, in one contiguous range",
          "[runtime][scheduler]") {
  rt::WorkerPool pool(3);
  ata::OraclePolicy oracle(std::vector<double>{1.0, 2.0, 4.0});
  rt::BatchScheduler scheduler(pool, oracle);
  const auto [workers, report] =
      scheduler.run(7, [](const rt::TaskContext& ctx) { return ctx.worker(); });
  CHECK(report.allocation == ata::Allocation(std::vector<std::size_t>{4, 2, 1}));
  CHECK(workers == std::vector<std::size_t>{0, 0, 0, 0, 1, 1, 2});
  CHECK(oracle.round() == 1);
}

TEST_CASE("the policy observes exactly the durations of the accepted tasks",
          "[runtime][scheduler]") {
  rt::WorkerPool pool(rt::PoolOptions(2).set_slowdown(
      1, rt::Slowdown::sleep(ata::sim::TimeModel::constant(1.0), 1ms)));
  ata::UniformPolicy policy(2);
  rt::BatchScheduler scheduler(pool, policy);
  const auto result = scheduler.run(6, [](const rt::TaskContext&) {});
  const auto& report = result.report;
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(policy.stats(i).count() == report.allocation[i]);
    CHECK(policy.stats(i).sum() == Approx(std::chrono::duration<double>(report.busy[i]).count()));
  }
  // Worker 1 sleeps 1 ms per task (3 tasks); worker 0 runs empty tasks.
  CHECK(report.busy[1] >= 3ms);
  CHECK(report.busy[0] < report.busy[1]);
  CHECK(report.critical_path() == report.busy[1]);
  CHECK(report.wall >= report.critical_path());
  CHECK(report.worker_time() == report.busy[0] + report.busy[1]);
}

TEST_CASE("greedy mode accepts the first B results and stops the surplus tasks",
          "[runtime][scheduler]") {
  constexpr std::size_t kWorkers = 4;
  constexpr std::size_t kBatch = 10;
  rt::WorkerPool pool(kWorkers);
  ata::DynamicPolicy gta(kWorkers, ata::Dispatch::greedy);
  rt::BatchScheduler scheduler(pool, gta);

  // Workers 1..3 each start one task that lasts until its stop is requested; worker 0 waits
  // for them to start, then produces all B results.
  std::mutex mutex;
  std::condition_variable_any changed;
  std::size_t slow_started = 0;
  std::atomic<int> stopped_by_request = 0;
  const auto [values, report] = scheduler.run(kBatch, [&](const rt::TaskContext& ctx) {
    std::unique_lock lock(mutex);
    if (ctx.worker() == 0) {
      changed.wait_for(lock, 10s, [&] { return slow_started == kWorkers - 1; });
      return ctx.task();
    }
    ++slow_started;
    changed.notify_all();
    changed.wait_for(lock, ctx.stop_token(), 10s, [] { return false; });
    if (ctx.stop_requested()) ++stopped_by_request;
    return ctx.task();
  });

  CHECK(values.size() == kBatch);
  CHECK(report.allocation == ata::Allocation(std::vector<std::size_t>{kBatch, 0, 0, 0}));
  CHECK(report.discarded() == kWorkers - 1);
  CHECK(report.tasks.size() == kBatch + kWorkers - 1);
  CHECK(stopped_by_request.load() == 3);
  CHECK(report.wall < 5s);  // the stop request, not the 10 s timeout, ended the surplus
  std::size_t j = 0;
  for (const auto& record : report.tasks) {
    if (record.accepted) {
      CHECK(record.worker == 0);
      CHECK(values[j++] == record.task);
    } else {
      CHECK(record.worker != 0);
      CHECK(report.busy[record.worker] == record.duration);  // discarded work is worker time
    }
  }
  // The policy saw the B accepted durations only.
  CHECK(gta.stats(0).count() == kBatch);
  CHECK(gta.stats(1).count() == 0);
}

TEST_CASE("a throwing task fails its batch with that exception; the pool stays usable",
          "[runtime][scheduler][errors]") {
  const std::string name = GENERATE("ata-e", "gta", "pull");
  CAPTURE(name);
  rt::WorkerPool pool(3);
  auto policy = policy_named(name, 3);
  rt::BatchScheduler scheduler(pool, *policy);
  const auto fails_at_5 = [](const rt::TaskContext& ctx) {
    if (ctx.task() == 5) throw std::out_of_range("task 5 failed");
    return ctx.task();
  };
  CHECK_THROWS_MATCHES(scheduler.run(12, fails_at_5), std::out_of_range,
                       Catch::Matchers::MessageMatches(ContainsSubstring("task 5 failed")));
  // A failed batch teaches the policy nothing.
  for (std::size_t i = 0; i < 3; ++i) CHECK(policy->stats(i).count() == 0);

  const auto [values, report] =
      scheduler.run(12, [](const rt::TaskContext& ctx) { return ctx.task(); });
  CHECK(values.size() == 12);
  CHECK(report.round == 2);
}

TEST_CASE("void and move-only results", "[runtime][scheduler]") {
  rt::WorkerPool pool(2);
  ata::AtaEmpiricalPolicy policy(2, 1.0);
  rt::BatchScheduler scheduler(pool, policy);
  std::atomic<std::size_t> sum = 0;
  const rt::BatchResult<void> done =
      scheduler.run(10, [&](const rt::TaskContext& ctx) { sum += ctx.task(); });
  CHECK(sum.load() == 45);
  CHECK(done.report.allocation.total() == 10);

  auto boxes =
      scheduler
          .run(5,
               [](const rt::TaskContext& ctx) { return std::make_unique<std::size_t>(ctx.task()); })
          .values;
  REQUIRE(boxes.size() == 5);
  for (std::size_t t = 0; t < 5; ++t) CHECK(*boxes[t] == t);
}

TEST_CASE("bad scheduler arguments are refused", "[runtime][scheduler][errors]") {
  rt::WorkerPool pool(2);
  ata::UniformPolicy three(3);
  CHECK_THROWS_MATCHES(rt::BatchScheduler(pool, three), ata::InvalidArgument,
                       Catch::Matchers::MessageMatches(
                           ContainsSubstring("policy 'uta' has 3 workers but the pool has 2")));
  ata::UniformPolicy two(2);
  rt::BatchScheduler scheduler(pool, two);
  CHECK_THROWS_MATCHES(scheduler.run(0, [](const rt::TaskContext&) {}), ata::InvalidArgument,
                       Catch::Matchers::MessageMatches(ContainsSubstring("got B = 0")));
  CHECK(scheduler.rounds() == 0);
}

TEST_CASE("a round report sums busy time and counts discarded tasks", "[runtime][report]") {
  rt::RoundReport report;
  CHECK(report.worker_time() == 0ns);
  CHECK(report.critical_path() == 0ns);
  report.busy = {3ms, 5ms, 1ms};
  report.wall = 6ms;
  report.tasks = {{0, 0, 3ms, true}, {1, 1, 5ms, true}, {2, 2, 1ms, false}};
  CHECK(report.worker_time() == 9ms);
  CHECK(report.critical_path() == 5ms);
  CHECK(report.overhead() == 1ms);
  CHECK(report.discarded() == 1);
  report.wall = 4ms;  // clocks of different threads: never a negative overhead
  CHECK(report.overhead() == 0ns);
}

#include <catch2/catch_test_macros.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <vector>

#include "ata/ata.hpp"
#include "ata/sim/simulation.hpp"

using namespace std::chrono_literals;
namespace rt = ata::runtime;

TEST_CASE("a sleep-slowdown worker's measured durations match its model's draws",
          "[runtime][slowdown]") {
  const auto model = ata::sim::TimeModel::shifted_exponential(1.0, 1.0);  // mean 2 ms
  const auto slow = rt::Slowdown::sleep(model, 1ms);
  constexpr std::uint64_t kSeed = 99;
  rt::WorkerPool pool(rt::PoolOptions(1).set_slowdown(0, slow).set_seed(kSeed));
  ata::UniformPolicy policy(1);
  rt::BatchScheduler scheduler(pool, policy);
  constexpr std::size_t kTasks = 40;
  const auto report = scheduler.run(kTasks, [](const rt::TaskContext&) {}).report;

  // Replaying the worker's stream gives the delays it slept, task by task.
  ata::sim::Rng replay(kSeed, 0);
  std::vector<std::chrono::nanoseconds> overshoots;
  double drawn_units = 0.0;
  for (const auto& record : report.tasks) {
    const auto delay = slow.draw(1, replay);
    drawn_units += std::chrono::duration<double, std::milli>(delay).count();
    CHECK(record.duration >= delay);  // a sleep never ends early
    overshoots.push_back(record.duration - delay);
  }
  // An idle machine oversleeps by tens of microseconds; the median ignores the few tasks
  // whose wake-up a busy machine delays by a scheduler time slice.
  std::nth_element(overshoots.begin(), overshoots.begin() + kTasks / 2, overshoots.end());
  CHECK(overshoots[kTasks / 2] < 1ms);
  // And the draws themselves follow the model: 40 draws of mean 2, sd 1 (fixed by the seed).
  const double mean = drawn_units / kTasks;
  CHECK(mean > 1.6);
  CHECK(mean < 2.4);
}

TEST_CASE("burn and repeat slowdowns cost what they say", "[runtime][slowdown]") {
  rt::PoolOptions options(2);
  options.set_slowdown(0, rt::Slowdown::burn(ata::sim::TimeModel::constant(0.5), 1ms))
      .set_slowdown(1, rt::Slowdown::repeat(3));
  rt::WorkerPool pool(options);
  ata::UniformPolicy policy(2);
  rt::BatchScheduler scheduler(pool, policy);
  std::vector<std::atomic<int>> runs(10);
  const auto report =
      scheduler.run(10, [&](const rt::TaskContext& ctx) { runs[ctx.task()]++; }).report;
  for (const auto& record : report.tasks) {
    CHECK(runs[record.task].load() == (record.worker == 1 ? 3 : 1));
    if (record.worker == 0) CHECK(record.duration >= 500us);
  }
}

TEST_CASE("ATA-Empirical on threads learns an allocation as good as OFTA's",
          "[runtime][learning]") {
  // The simulator's "linear" preset, 1 model unit = 50 us: mean task times 2.9, 5.8 and
  // 8.7 ms, long enough that a busy machine's late wake-ups do not blur the differences.
  // About 1 s of sleeping.
  const auto scenario = ata::sim::make_preset("linear", 3);
  constexpr auto kUnit = 50us;
  const std::vector<double> means =
      scenario.scaled(std::chrono::duration<double>(kUnit).count()).means();
  rt::WorkerPool pool(rt::PoolOptions::from_scenario(scenario, kUnit));
  ata::AtaEmpiricalPolicy learner(3, 1.0);
  rt::BatchScheduler scheduler(pool, learner);
  ata::OraclePolicy oracle(means);
  constexpr std::size_t kBatch = 6;
  const double best = oracle.allocate(kBatch).proxy_loss(means);
  const double uniform = ata::UniformPolicy(3).allocate(kBatch).proxy_loss(means);
  REQUIRE(uniform >= 1.5 * best);  // so the check below can fail

  constexpr std::size_t kRounds = 100;
  constexpr std::size_t kTail = 20;
  double tail_loss = 0.0;
  for (std::size_t round = 0; round < kRounds; ++round) {
    const auto report = scheduler.run(kBatch, [](const rt::TaskContext&) {}).report;
    if (round >= kRounds - kTail) tail_loss += report.allocation.proxy_loss(means);
  }
  CHECK(tail_loss / kTail < 1.25 * best);
}

TEST_CASE("a pool built from a scenario draws the simulator's task times", "[runtime][slowdown]") {
  // One task per worker in one uniform round: the simulator's worker time is the sum of each
  // worker's first draw, and a thread run sleeps exactly those draws (plus its overshoot).
  const auto scenario = ata::sim::make_preset("mixture", 5);  // five different laws
  constexpr auto kUnit = 10us;
  constexpr std::uint64_t kSeed = 3;
  const auto options = rt::PoolOptions::from_scenario(scenario, kUnit).set_seed(kSeed);

  ata::UniformPolicy simulated_policy(5);
  ata::sim::Simulation simulation(scenario.scaled(std::chrono::duration<double>(kUnit).count()),
                                  simulated_policy, /*batch=*/5, kSeed);
  const double simulated_worker_time = simulation.run_round().worker_time;

  rt::WorkerPool pool(options);
  ata::UniformPolicy policy(5);
  rt::BatchScheduler scheduler(pool, policy);
  const auto report = scheduler.run(5, [](const rt::TaskContext&) {}).report;

  double drawn = 0.0;
  for (const auto& record : report.tasks) {
    ata::sim::Rng stream(kSeed, record.worker);
    const auto delay = options.slowdown(record.worker).draw(1, stream);
    drawn += std::chrono::duration<double>(delay).count();
    CHECK(record.duration >= delay);
  }
  // Equal up to the nanosecond rounding of each delay.
  CHECK(std::abs(drawn - simulated_worker_time) < 5e-9);
}

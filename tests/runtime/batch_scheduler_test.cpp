#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_exception.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <latch>
#include <limits>
#include <memory>
#include <mutex>
#include <numeric>
#include <semaphore>
#include <stdexcept>
#include <string>
#include <thread>
#include <stop_token>
#include <vector>

#include "ata/ata.hpp"
#include "support/failing_allocator.hpp"
#include "support/eventually.hpp"
#include "support/without_backups.hpp"

using Catch::Approx;
using Catch::Matchers::ContainsSubstring;
using namespace std::chrono_literals;
namespace rt = ata::runtime;
using ata::testing::eventually;

namespace {

std::unique_ptr<ata::Policy> policy_named(const std::string& name, std::size_t workers) {
  ata::PolicyOptions options;
  options.alpha = 1.0;
  options.means.assign(workers, 1.0);
  return ata::make_policy(name, workers, options);
}

// Gives every task to one worker.
class OneWorkerPolicy final : public ata::Policy {
 public:
  OneWorkerPolicy(std::size_t workers, std::size_t target) : Policy(workers), target_(target) {}
  [[nodiscard]] std::string_view name() const noexcept override { return "one-worker"; }

 protected:
  void choose(std::size_t batch, ata::Allocation& out) override { out.add(target_, batch); }

 private:
  std::size_t target_;
};

// A custom strategy with a bug of the chosen kind in its allocation.
class MiscountingPolicy final : public ata::Policy {
 public:
  enum class Fault { none, one_more, one_less, too_few_workers, too_many_workers, wraps_around };
  explicit MiscountingPolicy(std::size_t workers) : Policy(workers) {}
  [[nodiscard]] std::string_view name() const noexcept override { return "miscounting"; }
  Fault fault = Fault::none;

 protected:
  void choose(std::size_t batch, ata::Allocation& out) override {
    switch (fault) {
      case Fault::none:
        out.add(0, batch);
        break;
      case Fault::one_more:
        out.add(0, batch + 1);
        break;
      case Fault::one_less:
        out.add(0, batch - 1);
        break;
      case Fault::too_few_workers:
        out = ata::Allocation(std::vector<std::size_t>{batch});
        break;
      case Fault::too_many_workers:
        out = ata::Allocation(std::vector<std::size_t>{batch, 0, 0});
        break;
      case Fault::wraps_around:  // total() wraps around to exactly B
        out.add(0, std::numeric_limits<std::size_t>::max());
        out.add(1, batch + 1);
        break;
    }
  }
};

// choose() throws in round `failing_round`; learn() throws at its `failing_lesson`-th call.
class FaultyPolicy final : public ata::Policy {
 public:
  explicit FaultyPolicy(std::size_t workers) : Policy(workers) {}
  [[nodiscard]] std::string_view name() const noexcept override { return "faulty"; }
  std::size_t failing_round = 0;   // 0: never
  std::size_t failing_lesson = 0;  // 0: never
  std::size_t lessons = 0;

 protected:
  void choose(std::size_t batch, ata::Allocation& out) override {
    if (round() == failing_round) {
      throw std::runtime_error("choose failed in round " + std::to_string(round()));
    }
    for (std::size_t t = 0; t < batch; ++t) out.add(t % workers());
  }
  void learn(std::size_t /*worker*/, double /*seconds*/) override {
    if (++lessons == failing_lesson) throw std::runtime_error("learn failed");
  }
};

}  // namespace

TEST_CASE("every mode returns B results in task-index order", "[runtime][scheduler]") {
  const std::string name = GENERATE("ata", "ata-e", "ofta", "uta", "gta", "pull");
  // Without polling, every hand-over goes through the condition variables.
  const auto spin = GENERATE(rt::PoolOptions::kDefaultIdleSpin, std::chrono::nanoseconds{0});
  constexpr std::size_t kWorkers = 3;
  rt::WorkerPool pool(rt::PoolOptions(kWorkers).set_idle_spin(spin));
  auto policy = policy_named(name, kWorkers);
  rt::BatchScheduler scheduler(pool, *policy, ata::testing::without_backups());
  for (std::size_t batch : {1u, 2u, 7u, 64u}) {
    CAPTURE(name, spin.count(), batch);
    auto [values, report] =
        scheduler.run(batch, [](const rt::TaskContext& ctx) { return std::to_string(ctx.task()); });
    REQUIRE(values.size() == batch);
    CHECK(report.allocation.total() == batch);
    CHECK(report.dispatch == (name == "gta"    ? ata::Dispatch::greedy
                              : name == "pull" ? ata::Dispatch::pull
                                               : ata::Dispatch::allocated));
    CHECK(report.round == scheduler.rounds());
    // Result j comes from the j-th accepted task, in task-index order.
    std::size_t j = 0;
    for (const auto& record : report.tasks) {
      if (record.accepted) CHECK(values[j++] == std::to_string(record.task));
    }
    CHECK(j == batch);
    if (report.dispatch != ata::Dispatch::greedy) {
      REQUIRE(report.tasks.size() == batch);
      for (std::size_t t = 0; t < batch; ++t) CHECK(values[t] == std::to_string(t));
    }
  }
}

TEST_CASE("allocated and pull modes run each of the B tasks exactly once", "[runtime][scheduler]") {
  const std::string name = GENERATE("ata-e", "uta", "pull");
  rt::WorkerPool pool(4);
  auto policy = policy_named(name, 4);
  rt::BatchScheduler scheduler(pool, *policy, ata::testing::without_backups());
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
  rt::BatchScheduler scheduler(pool, oracle, ata::testing::without_backups());
  const auto [workers, report] =
      scheduler.run(7, [](const rt::TaskContext& ctx) { return ctx.worker(); });
  CHECK(report.allocation == ata::Allocation(std::vector<std::size_t>{4, 2, 1}));
  CHECK(workers == std::vector<std::size_t>{0, 0, 0, 0, 1, 1, 2});
  CHECK(oracle.round() == 1);
}

TEST_CASE("the policy observes exactly the durations of the accepted tasks",
          "[runtime][scheduler]") {
  rt::WorkerPool pool(rt::PoolOptions(2).set_slowdown(
      1, rt::Slowdown::sleep(ata::models::TimeModel::constant(1.0), 1ms)));
  ata::UniformPolicy policy(2);
  // Without backups: worker 0 would copy worker 1's slow tasks.
  rt::BatchScheduler scheduler(pool, policy, ata::testing::without_backups());
  const auto result = scheduler.run(6, [](const rt::TaskContext&) {});
  const auto& report = result.report;
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(policy.stats(i).count() == report.allocation[i]);
    CHECK(policy.stats(i).sum() == Approx(std::chrono::duration<double>(report.busy[i]).count()));
  }
  // Worker 1's 3 tasks each last a draw of 1 ms (worker 0's are empty). A sleeping lane wakes
  // early by what its waits overran before, so the three may sum to a little less than 3 ms,
  // but none is cut by more than half.
  CHECK(report.busy[1] >= 1500us);
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
  rt::BatchScheduler scheduler(pool, gta, ata::testing::without_backups());

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
  CHECK(stopped_by_request.load() == 3);  // the stop request, not the 10 s timeout, ended them
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
  rt::BatchScheduler scheduler(pool, *policy, ata::testing::without_backups());
  const auto fails_at_5 = [](const rt::TaskContext& ctx) {
    if (ctx.task() == 5) throw std::out_of_range("task 5 failed");
    // Later tasks wait for the failure's stop request, so that task 5 surely ends before B
    // results are in: in greedy mode, a task ending after that is surplus.
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (ctx.task() > 5 && !ctx.stop_requested() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(100us);
    }
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
  rt::BatchScheduler scheduler(pool, policy, ata::testing::without_backups());
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
                           ContainsSubstring("policy 'uta' has 3 workers but there are 2 lanes")));
  ata::UniformPolicy two(2);
  rt::BatchScheduler scheduler(pool, two, ata::testing::without_backups());
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

TEST_CASE("greedy mode: surplus tasks that throw on their stop request do not fail the batch",
          "[runtime][scheduler][errors]") {
  constexpr std::size_t kWorkers = 4;
  constexpr std::size_t kBatch = 10;
  rt::WorkerPool pool(kWorkers);
  ata::DynamicPolicy gta(kWorkers, ata::Dispatch::greedy);
  rt::BatchScheduler scheduler(pool, gta, ata::testing::without_backups());

  // Workers 1..3 each start one task that honours its stop request by throwing; worker 0
  // waits for them to start, then produces all B results.
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
    throw std::runtime_error("cancelled");
  });
  CHECK(values.size() == kBatch);
  CHECK(report.allocation == ata::Allocation(std::vector<std::size_t>{kBatch, 0, 0, 0}));
  CHECK(report.discarded() == kWorkers - 1);
  CHECK(stopped_by_request.load() == 3);  // the stop request, not the 10 s timeout, ended them
  CHECK(gta.stats(0).count() == kBatch);
}

TEST_CASE("a pull or greedy batch completes when its tasks have, not when busy workers pass by",
          "[runtime][scheduler][errors]") {
  const std::string name = GENERATE("pull", "gta");
  CAPTURE(name);
  rt::WorkerPool pool(2);
  OneWorkerPolicy on_worker_1(2, 1);
  rt::BatchScheduler blocker(pool, on_worker_1);
  auto policy = policy_named(name, 2);
  rt::BatchScheduler scheduler(pool, *policy, ata::testing::without_backups());

  // Worker 1 is busy with another batch until released, ignoring stop requests.
  std::binary_semaphore release(0);
  std::latch busy(1);
  std::stop_token held;  // the blocking task's, written before busy counts down
  auto holding = std::async(std::launch::async, [&] {
    return blocker.run(1, [&](const rt::TaskContext& ctx) {
      held = ctx.stop_token();
      busy.count_down();
      release.acquire();
    });
  });
  busy.wait();

  std::atomic<int> calls = 0;
  auto batch = std::async(std::launch::async, [&] {
    return scheduler.run(8, [&](const rt::TaskContext& ctx) {
      calls.fetch_add(1);
      return ctx.worker();
    });
  });
  // Worker 0 runs all 8 tasks, while worker 1 still holds this batch's chunk in its queue.
  REQUIRE(batch.wait_for(10s) == std::future_status::ready);
  const auto [workers, report] = batch.get();
  CHECK(workers == std::vector<std::size_t>(8, 0));
  CHECK(report.tasks.size() == 8);
  CHECK(calls.load() == 8);
  CHECK(pool.queued_chunks() == 1);

  SECTION("the busy worker reaches the stale chunk later and skips it") {
    release.release();
    holding.get();
    // Queues are FIFO: this runs on worker 1 after the stale chunk.
    blocker.run(1, [](const rt::TaskContext&) {});
    CHECK(calls.load() == 8);  // the finished batch's task (a dead lambda by now) never ran
  }
  SECTION("shutting down abandons the stale chunk, failing only the batch that still ran") {
    auto closing = std::async(std::launch::async, [&] { pool.shutdown(); });
    // Released once shutdown has stopped the running batch, not merely started.
    REQUIRE(eventually([&] { return held.stop_requested(); }));
    release.release();
    CHECK_THROWS_MATCHES(
        holding.get(), rt::ShutdownError,
        Catch::Matchers::MessageMatches(ContainsSubstring("stopped while it ran")));
    closing.get();
    CHECK(calls.load() == 8);
  }
}

TEST_CASE("a policy whose allocation does not give B tasks to the pool's workers is refused",
          "[runtime][scheduler][errors]") {
  using Fault = MiscountingPolicy::Fault;
  const auto [fault, message] = GENERATE(
      std::pair{Fault::one_more, "gave quotas of more than 8 tasks for a batch of B = 8"},
      std::pair{Fault::one_less, "gave quotas of 7 tasks for a batch of B = 8 and no racer"},
      std::pair{Fault::too_few_workers, "planned for 1 workers, but there are 2"},
      std::pair{Fault::too_many_workers, "planned for 3 workers, but there are 2"},
      std::pair{Fault::wraps_around, "gave quotas of more than 8 tasks"});
  CAPTURE(message);
  rt::WorkerPool pool(2);
  MiscountingPolicy policy(2);
  rt::BatchScheduler scheduler(pool, policy, ata::testing::without_backups());
  std::atomic<int> calls = 0;
  const auto task = [&](const rt::TaskContext& ctx) {
    calls.fetch_add(1);
    return ctx.task();
  };
  policy.fault = fault;
  CHECK_THROWS_MATCHES(scheduler.run(8, task), ata::Error,
                       Catch::Matchers::MessageMatches(ContainsSubstring("policy 'miscounting'") &&
                                                       ContainsSubstring(message)));
  CHECK(calls.load() == 0);
  // The policy started the round, so the scheduler counts it too.
  CHECK(policy.round() == 1);
  CHECK(scheduler.rounds() == 1);

  policy.fault = Fault::none;
  const auto [values, report] = scheduler.run(8, task);
  CHECK(values.size() == 8);
  CHECK(report.round == 2);
}

TEST_CASE("a batch above the maximum size is refused before anything is allocated",
          "[runtime][scheduler][errors]") {
  rt::WorkerPool pool(2);
  ata::UniformPolicy policy(2);
  rt::BatchScheduler scheduler(pool, policy, ata::testing::without_backups());
  const auto noop = [](const rt::TaskContext&) { return 0; };
  CHECK_THROWS_MATCHES(scheduler.run(rt::BatchScheduler::kMaxBatch + 1, noop), ata::InvalidArgument,
                       Catch::Matchers::MessageMatches(ContainsSubstring("at most 4194304 tasks") &&
                                                       ContainsSubstring("got B = 4194305")));
  CHECK_THROWS_MATCHES(scheduler.run(1'000'000'000, noop), ata::InvalidArgument,
                       Catch::Matchers::MessageMatches(ContainsSubstring("got B = 1000000000")));
  CHECK_THROWS_AS(scheduler.run(std::numeric_limits<std::size_t>::max(), noop),
                  ata::InvalidArgument);
  CHECK(scheduler.rounds() == 0);
  CHECK(policy.round() == 0);
}

TEST_CASE("an exception from the policy's choose() leaves both round counters as they were",
          "[runtime][scheduler][errors]") {
  rt::WorkerPool pool(2);
  FaultyPolicy policy(2);
  policy.failing_round = 2;
  rt::BatchScheduler scheduler(pool, policy, ata::testing::without_backups());
  const auto task = [](const rt::TaskContext& ctx) { return ctx.task(); };
  CHECK(scheduler.run(4, task).report.round == 1);
  CHECK_THROWS_MATCHES(
      scheduler.run(4, task), std::runtime_error,
      Catch::Matchers::MessageMatches(ContainsSubstring("choose failed in round 2")));
  CHECK(policy.round() == 1);
  CHECK(scheduler.rounds() == 1);

  policy.failing_round = 0;
  const auto report = scheduler.run(4, task).report;
  CHECK(report.round == 2);
  CHECK(policy.round() == 2);
}

TEST_CASE("an exception from the policy's learn() is reported with the batch's results",
          "[runtime][scheduler][errors]") {
  rt::WorkerPool pool(2);
  FaultyPolicy policy(2);
  policy.failing_lesson = 3;
  rt::BatchScheduler scheduler(pool, policy, ata::testing::without_backups());
  const auto task = [](const rt::TaskContext& ctx) { return 10 * ctx.task(); };
  const auto [values, report] = scheduler.run(6, task);
  CHECK(values == std::vector<std::size_t>{0, 10, 20, 30, 40, 50});
  REQUIRE(report.learning_error);
  CHECK_THROWS_MATCHES(std::rethrow_exception(report.learning_error), std::runtime_error,
                       Catch::Matchers::MessageMatches(ContainsSubstring("learn failed")));
  // The policy absorbed the durations up to the failing one, and none after it.
  const auto observed = [&] { return policy.stats(0).count() + policy.stats(1).count(); };
  CHECK(observed() == 3);

  const auto next = scheduler.run(6, task).report;
  CHECK_FALSE(next.learning_error);
  CHECK(observed() == 9);
  CHECK(policy.round() == scheduler.rounds());
}

TEST_CASE("an allocation failure anywhere in run() fails it cleanly; no task runs after it",
          "[runtime][scheduler][errors]") {
  const std::string name = GENERATE("uta", "ata-e", "gta", "pull");
  CAPTURE(name);
  rt::WorkerPool pool(2);
  auto policy = policy_named(name, 2);
  rt::BatchScheduler scheduler(pool, *policy, ata::testing::without_backups());
  // One task per worker: once it returns, every worker has passed all the chunks before it.
  ata::UniformPolicy uniform(2);
  rt::BatchScheduler flush(pool, uniform, ata::testing::without_backups());

  std::atomic<bool> returned = false;
  std::atomic<int> late_calls = 0;
  const auto task = [&](const rt::TaskContext& ctx) {
    if (returned.load()) late_calls.fetch_add(1);
    return std::to_string(ctx.task());
  };
  std::size_t failures = 0;
  std::vector<std::string> wrong;  // what escaped run() other than its own clear errors
  for (long k = 0;; ++k) {
    returned = false;
    bool failed = false;
    bool learning_error = false;
    std::size_t results = 0;
    {
      // Only this thread's allocations fail; no Catch2 macro runs in this scope.
      const auto faults = ata::testing::AllocationFaults::fail_at(k);
      try {
        auto result = scheduler.run(8, task);
        results = result.values.size();
        learning_error = static_cast<bool>(result.report.learning_error);
        failed = faults.failed();
      } catch (const ata::Error& e) {
        failed = true;
        if (std::string(e.what()).find("out of memory") == std::string::npos) {
          wrong.emplace_back(e.what());
        }
      } catch (const std::exception& e) {
        failed = true;
        wrong.emplace_back(e.what());
      }
    }
    returned = true;
    (void)flush.run(2, [](const rt::TaskContext&) {});
    if (!failed) {
      CHECK(results == 8);
      break;
    }
    // A failure inside the policy's observe() keeps the results and reports it.
    if (results > 0) CHECK(learning_error);
    ++failures;
  }
  CAPTURE(failures);
  for (const auto& what : wrong) UNSCOPED_INFO(what);
  CHECK(wrong.empty());
  CHECK(failures >= 5);  // the run allocates its slots, batch, report and results
  CHECK(late_calls.load() == 0);
}

#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_exception.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <atomic>
#include <chrono>
#include <exception>
#include <future>
#include <latch>
#include <memory>
#include <semaphore>
#include <thread>
#include <vector>

#include "ata/ata.hpp"
#include "support/failing_allocator.hpp"

#ifdef __linux__
#include <sched.h>
#include "support/eventually.hpp"
#include "support/without_backups.hpp"
#endif

using Catch::Matchers::ContainsSubstring;
using namespace std::chrono_literals;
namespace rt = ata::runtime;
using ata::testing::eventually;

namespace {

}  // namespace

TEST_CASE("each worker keeps its index and the pool its options", "[runtime][pool]") {
  rt::WorkerPool pool(rt::PoolOptions(3).set_seed(11));
  CHECK(pool.size() == 3);
  CHECK(pool.options().seed() == 11);
  CHECK(pool.queued_chunks() == 0);
  CHECK_FALSE(pool.is_shut_down());
  ata::UniformPolicy policy(3);
  rt::BatchScheduler scheduler(pool, policy, ata::testing::without_backups());
  // The same worker index is always the same thread.
  std::vector<std::thread::id> first(3);
  for (int round = 0; round < 5; ++round) {
    auto [ids, report] =
        scheduler.run(3, [](const rt::TaskContext&) { return std::this_thread::get_id(); });
    for (const auto& record : report.tasks) {
      if (round == 0) first[record.worker] = ids[record.task];
      CHECK(ids[record.task] == first[record.worker]);
    }
  }
  CHECK(first[0] != first[1]);
  CHECK(first[1] != first[2]);
}

#ifdef __linux__
TEST_CASE("pinned workers run on their CPU", "[runtime][pool]") {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  REQUIRE(sched_getaffinity(0, sizeof allowed, &allowed) == 0);
  std::vector<unsigned> cpus;
  for (unsigned cpu = 0; cpu < CPU_SETSIZE && cpus.size() < 2; ++cpu) {
    if (CPU_ISSET(cpu, &allowed)) cpus.push_back(cpu);
  }
  // Worker 2 shares worker 0's CPU: unequal shares of the machine.
  rt::PoolOptions options(3);
  options.set_cpu(0, cpus.front()).set_cpu(1, cpus.back()).set_cpu(2, cpus.front());
  rt::WorkerPool pool(options);
  CHECK(pool.options().cpu(2) == cpus.front());
  ata::UniformPolicy policy(3);
  rt::BatchScheduler scheduler(pool, policy, ata::testing::without_backups());
  const auto [where, report] =
      scheduler.run(30, [](const rt::TaskContext&) { return sched_getcpu(); });
  for (const auto& record : report.tasks) {
    CHECK(where[record.task] == static_cast<int>(*options.cpu(record.worker)));
  }
}
#endif

TEST_CASE("a CPU the process may not use is refused", "[runtime][pool][errors]") {
  rt::PoolOptions options(2);
  options.set_cpu(1, 100'000);
  CHECK_THROWS_MATCHES(
      rt::WorkerPool(options), ata::InvalidArgument,
      Catch::Matchers::MessageMatches(ContainsSubstring("worker 1 is pinned to CPU 100000")));
}

TEST_CASE("shutdown fails a pending batch, waits for a task that ignores stop, refuses work",
          "[runtime][pool][errors]") {
  rt::WorkerPool pool(1);
  ata::UniformPolicy policy(1);
  rt::BatchScheduler scheduler(pool, policy, ata::testing::without_backups());
  std::binary_semaphore release(0);
  std::latch started(1);

  // Batch 1 occupies the only worker until released, ignoring its stop request.
  auto running = std::async(std::launch::async, [&] {
    return scheduler.run(2, [&](const rt::TaskContext& ctx) {
      if (ctx.task() == 0) {
        started.count_down();
        release.acquire();
      }
      return ctx.task();
    });
  });
  started.wait();
  // Batch 2 waits in the queue behind it.
  auto pending = std::async(std::launch::async, [&] {
    return scheduler.run(3, [](const rt::TaskContext& ctx) { return ctx.task(); });
  });
  REQUIRE(eventually([&] { return pool.queued_chunks() == 1; }));

  auto closing = std::async(std::launch::async, [&] { pool.shutdown(); });
  // The pending batch fails as soon as shutdown starts, while the worker is still busy.
  REQUIRE(pending.wait_for(10s) == std::future_status::ready);
  CHECK_THROWS_MATCHES(pending.get(), rt::ShutdownError,
                       Catch::Matchers::MessageMatches(ContainsSubstring("never ran its share")));
  CHECK(pool.is_shut_down());
  // shutdown() waits for a running task that ignores its stop request.
  CHECK(closing.wait_for(50ms) == std::future_status::timeout);
  CHECK(running.wait_for(0s) == std::future_status::timeout);

  release.release();
  // Stopped while it ran: task 1 was skipped, so the batch fails.
  CHECK_THROWS_MATCHES(running.get(), rt::ShutdownError,
                       Catch::Matchers::MessageMatches(ContainsSubstring("stopped while it ran")));
  closing.get();

  CHECK_THROWS_MATCHES(
      scheduler.run(1, [](const rt::TaskContext&) {}), rt::ShutdownError,
      Catch::Matchers::MessageMatches(ContainsSubstring("worker pool is shut down")));
  pool.shutdown();  // idempotent
}

TEST_CASE("a worker can neither shut its pool down nor wait for a batch on it",
          "[runtime][pool][errors]") {
  rt::WorkerPool pool(2);
  ata::UniformPolicy policy(2);
  rt::BatchScheduler scheduler(pool, policy, ata::testing::without_backups());
  const auto [messages, report] = scheduler.run(2, [&](const rt::TaskContext& ctx) {
    try {
      if (ctx.task() == 0) {
        pool.shutdown();
      } else {
        (void)scheduler.run(1, [](const rt::TaskContext&) {});
      }
    } catch (const ata::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  });
  CHECK_THAT(messages[0], ContainsSubstring("would wait for itself"));
  CHECK_THAT(messages[1], ContainsSubstring("would wait for itself"));
  CHECK_FALSE(pool.is_shut_down());
}

TEST_CASE("shutdown allocates nothing: with every allocation failing it fails each queued batch",
          "[runtime][pool][errors]") {
  rt::WorkerPool pool(1);
  ata::UniformPolicy policy(1);
  rt::BatchScheduler scheduler(pool, policy, ata::testing::without_backups());
  std::binary_semaphore release(0);
  std::latch started(1);
  auto running = std::async(std::launch::async, [&] {
    return scheduler.run(1, [&](const rt::TaskContext&) {
      started.count_down();
      release.acquire();
    });
  });
  started.wait();
  constexpr std::size_t kPending = 5;
  std::vector<std::future<rt::BatchResult<void>>> pending;
  for (std::size_t b = 0; b < kPending; ++b) {
    pending.push_back(std::async(std::launch::async,
                                 [&] { return scheduler.run(2, [](const rt::TaskContext&) {}); }));
  }
  REQUIRE(eventually([&] { return pool.queued_chunks() == kPending; }));

  std::exception_ptr shutdown_error;
  std::thread closer([&] {
    const auto faults = ata::testing::AllocationFaults::fail_all();
    try {
      pool.shutdown();
    } catch (...) {
      shutdown_error = std::current_exception();
    }
  });
  for (auto& batch : pending) {
    REQUIRE(batch.wait_for(10s) == std::future_status::ready);
    CHECK_THROWS_MATCHES(batch.get(), rt::ShutdownError,
                         Catch::Matchers::MessageMatches(ContainsSubstring("never ran its share")));
  }
  release.release();
  CHECK_THROWS_AS(running.get(), rt::ShutdownError);
  closer.join();
  CHECK_FALSE(shutdown_error);
}

TEST_CASE("shutdown stops the running batches: tasks and delays honouring stop end early",
          "[runtime][pool][errors]") {
  const std::string name = GENERATE("uta", "gta", "pull");
  CAPTURE(name);
  // Worker 1 sleeps 10 s after each task; worker 0's tasks wait for their stop request.
  rt::PoolOptions options(2);
  options.set_slowdown(1, rt::Slowdown::sleep(ata::models::TimeModel::constant(10.0), 1s));
  rt::WorkerPool pool(options);
  auto policy = ata::make_policy(name, 2);
  rt::BatchScheduler scheduler(pool, *policy, ata::testing::without_backups());
  std::atomic<int> started = 0;
  std::atomic<int> stopped = 0;
  auto running = std::async(std::launch::async, [&] {
    return scheduler.run(4, [&](const rt::TaskContext& ctx) {
      started.fetch_add(1);
      const auto deadline = std::chrono::steady_clock::now() + 10s;
      while (ctx.worker() == 0 && !ctx.stop_requested() &&
             std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(100us);
      }
      if (ctx.worker() == 0 && ctx.stop_requested()) ++stopped;
    });
  });
  REQUIRE(eventually([&] { return started.load() >= 2; }));  // both workers inside the batch
  pool.shutdown();
  CHECK(stopped.load() >= 1);  // shutdown's stop request ended the task, not its 10 s limit
  CHECK_THROWS_MATCHES(running.get(), rt::ShutdownError,
                       Catch::Matchers::MessageMatches(ContainsSubstring("stopped while it ran")));
}

TEST_CASE("a task may destroy its own pool", "[runtime][pool][errors]") {
  auto pool = std::make_unique<rt::WorkerPool>(2);
  ata::UniformPolicy policy(2);
  rt::BatchScheduler scheduler(*pool, policy, ata::testing::without_backups());
  // The destructor stops the batch, joins the other worker and leaves this one to exit
  // when the task returns.
  CHECK_THROWS_MATCHES(scheduler.run(1, [&](const rt::TaskContext&) { pool.reset(); }),
                       rt::ShutdownError,
                       Catch::Matchers::MessageMatches(ContainsSubstring("stopped while it ran")));
  CHECK(pool == nullptr);
}

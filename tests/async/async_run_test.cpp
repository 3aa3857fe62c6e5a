#include <utility>  // before Asio (g++ 12)

#include <atomic>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_exception.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <chrono>
#include <condition_variable>
#include <future>
#include <latch>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "ata/ata.hpp"
#include "ata/runtime/async_run.hpp"
#include "support/gate.hpp"
#include "support/without_backups.hpp"

namespace asio = boost::asio;
namespace rt = ata::runtime;
using namespace std::chrono_literals;
using ata::testing::Gate;
using Catch::Matchers::ContainsSubstring;

namespace {

std::string error_text(const std::exception_ptr& error) {
  if (!error) return "";
  try {
    std::rethrow_exception(error);
  } catch (const boost::system::system_error& e) {
    return "system_error: " + e.code().message();
  } catch (const std::exception& e) {
    return e.what();
  }
}

bool is_code(const std::exception_ptr& error, boost::system::error_code code) {
  try {
    if (error) std::rethrow_exception(error);
  } catch (const boost::system::system_error& e) {
    return e.code() == code;
  } catch (...) {
  }
  return false;
}

const auto kSquare = [](const rt::TaskContext& ctx) { return ctx.task() * ctx.task(); };

void check_squares(const std::vector<std::size_t>& values, std::size_t batch) {
  REQUIRE(values.size() == batch);
  for (std::size_t j = 0; j < batch; ++j) REQUIRE(values[j] == j * j);
}

}  // namespace

TEST_CASE("async_run completes a callback through its executor, never inline", "[async]") {
  rt::WorkerPool pool(2);
  ata::UniformPolicy policy(2);
  rt::BatchScheduler scheduler(pool, policy, ata::testing::without_backups());
  asio::io_context io;
  bool returned = false;
  bool called = false;
  std::thread::id handler_thread;
  // A handler without an associated executor would run on the system executor's threads.
  rt::async_run(
      scheduler, 8, kSquare,
      asio::bind_executor(io, [&](std::exception_ptr error, rt::BatchResult<std::size_t> result) {
        CHECK(returned);  // async_run had returned before
        CHECK_FALSE(error);
        check_squares(result.values, 8);
        CHECK(result.report.allocation.total() == 8);
        handler_thread = std::this_thread::get_id();
        called = true;
      }));
  returned = true;
  // The batch is outstanding work: run() returns only after the handler ran.
  const auto handlers = io.run();
  CHECK(called);
  CHECK(handlers == 1);
  CHECK(handler_thread == std::this_thread::get_id());
}

TEST_CASE("async_run with use_future, deferred and a strand", "[async]") {
  rt::WorkerPool pool(3);
  ata::AtaEmpiricalPolicy policy(3, 1.0);
  rt::BatchScheduler scheduler(pool, policy, ata::testing::without_backups());

  std::future<rt::BatchResult<std::size_t>> future =
      rt::async_run(scheduler, 10, kSquare, asio::use_future);
  check_squares(future.get().values, 10);

  // A failing task reaches the future as its exception.
  auto failing = rt::async_run(
      scheduler, 4,
      [](const rt::TaskContext& ctx) {
        if (ctx.task() == 2) throw std::runtime_error("task 2 failed");
        return ctx.task();
      },
      asio::use_future);
  REQUIRE_THROWS_WITH(failing.get(), "task 2 failed");

  asio::thread_pool threads(2);
  auto strand = asio::make_strand(threads);
  auto deferred = rt::async_run(scheduler, 6, kSquare, asio::deferred);
  std::promise<bool> on_strand;
  // Nothing runs until the deferred operation is launched with a token.
  std::move(deferred)(asio::bind_executor(
      strand, [&](std::exception_ptr error, rt::BatchResult<std::size_t> result) {
        check_squares(result.values, 6);
        on_strand.set_value(!error && strand.running_in_this_thread());
      }));
  CHECK(on_strand.get_future().get());
  threads.join();
}

TEST_CASE("async_run in coroutines: 8 producer threads and 8 coroutines x 500 batches",
          "[async][stress]") {
  // Late binding: the pacer's queue, shared by both front ends.
  const bool late = GENERATE(false, true);
  CAPTURE(late);
  rt::WorkerPool pool(4);
  ata::AtaEmpiricalPolicy policy(4, 1.0);
  rt::BatchScheduler scheduler =
      late ? rt::BatchScheduler(pool, policy, rt::LateBindingOptions{}.set_max_in_flight(8))
           : rt::BatchScheduler(pool, policy, rt::SchedulerOptions{}.set_max_in_flight(8));
  constexpr int kBatches = 500;
  std::atomic<int> good{0};
  std::atomic<std::size_t> most_in_flight{0};
  const auto task = [&](const rt::TaskContext& ctx) {
    const std::size_t now = scheduler.in_flight();
    std::size_t seen = most_in_flight.load();
    while (now > seen && !most_in_flight.compare_exchange_weak(seen, now)) {
    }
    return ctx.task() * ctx.task();
  };

  asio::io_context io;
  for (int c = 0; c < 8; ++c) {
    asio::co_spawn(
        io,
        [&, c]() -> asio::awaitable<void> {
          for (int k = 0; k < kBatches; ++k) {
            const std::size_t batch = 1 + static_cast<std::size_t>((c + k) % 16);
            auto result = co_await rt::async_run(scheduler, batch, task, asio::use_awaitable);
            bool ok = result.values.size() == batch;
            for (std::size_t j = 0; ok && j < batch; ++j) ok = result.values[j] == j * j;
            if (ok) good.fetch_add(1);
          }
        },
        asio::detached);
  }
  std::vector<std::jthread> producers;
  for (int p = 0; p < 8; ++p) {
    producers.emplace_back([&, p] {
      for (int k = 0; k < kBatches; ++k) {
        const std::size_t batch = 1 + static_cast<std::size_t>((p * 7 + k) % 16);
        auto result = scheduler.run(batch, task);
        bool ok = result.values.size() == batch;
        for (std::size_t j = 0; ok && j < batch; ++j) ok = result.values[j] == j * j;
        if (ok) good.fetch_add(1);
      }
    });
  }
  std::jthread io_thread([&] { io.run(); });
  io.run();
  producers.clear();
  io_thread.join();
  CHECK(good.load() == 16 * kBatches);
  CHECK(most_in_flight.load() <= 8);
  CHECK(scheduler.in_flight() == 0);
  CHECK(scheduler.rounds() == 16 * kBatches);
}

TEST_CASE("cancellation: mid-batch, while queued, and after completion", "[async]") {
  const bool late_binding = GENERATE(false, true);
  CAPTURE(late_binding);
  rt::WorkerPool pool(2);
  ata::UniformPolicy policy(2);
  rt::BatchScheduler scheduler =
      late_binding ? rt::BatchScheduler(pool, policy, rt::LateBindingOptions{}.set_max_in_flight(1))
                   : rt::BatchScheduler(pool, policy, rt::SchedulerOptions{}.set_max_in_flight(1));
  asio::io_context io;
  Gate gate;
  std::atomic<int> started{0};
  std::atomic<int> queued_calls{0};

  asio::cancellation_signal running_signal;
  asio::cancellation_signal queued_signal;
  std::exception_ptr running_error;
  std::exception_ptr queued_error;
  bool running_done = false;
  bool queued_done = false;
  // Occupies the only slot; its tasks wait until stopped.
  rt::async_run(
      scheduler, 4,
      [&](const rt::TaskContext& ctx) {
        started.fetch_add(1);
        gate.wait(ctx);
      },
      asio::bind_cancellation_slot(
          running_signal.slot(),
          asio::bind_executor(io, [&](std::exception_ptr e, rt::BatchResult<void>) {
            running_error = e;
            running_done = true;
          })));
  // Waits for the slot; cancelled there, its task never runs.
  rt::async_run(
      scheduler, 4, [&](const rt::TaskContext&) { queued_calls.fetch_add(1); },
      asio::bind_cancellation_slot(
          queued_signal.slot(),
          asio::bind_executor(io, [&](std::exception_ptr e, rt::BatchResult<void>) {
            queued_error = e;
            queued_done = true;
          })));
  while (started.load() < 2) std::this_thread::yield();
  CHECK(scheduler.in_flight() == 1);
  queued_signal.emit(asio::cancellation_type::terminal);
  running_signal.emit(asio::cancellation_type::terminal);
  io.run();
  CHECK(running_done);
  CHECK(queued_done);
  INFO(error_text(running_error) << " / " << error_text(queued_error));
  CHECK(is_code(running_error, asio::error::operation_aborted));
  CHECK(is_code(queued_error, asio::error::operation_aborted));
  CHECK(queued_calls.load() == 0);
  CHECK(scheduler.in_flight() == 0);

  // After completion a signal is harmless; the scheduler keeps serving.
  io.restart();
  asio::cancellation_signal late;
  std::exception_ptr late_error = std::make_exception_ptr(std::runtime_error("not run"));
  rt::async_run(scheduler, 4, kSquare,
                asio::bind_cancellation_slot(
                    late.slot(), asio::bind_executor(
                                     io, [&](std::exception_ptr e, rt::BatchResult<std::size_t> r) {
                                       late_error = e;
                                       check_squares(r.values, 4);
                                     })));
  io.run();
  late.emit(asio::cancellation_type::terminal);
  CHECK_FALSE(late_error);
  gate.open();
}

TEST_CASE("a deadline stops the batch: timed_out asynchronously, DeadlineError blocking",
          "[async]") {
  rt::WorkerPool pool(2);
  ata::UniformPolicy policy(2);
  rt::BatchScheduler scheduler(pool, policy, ata::testing::without_backups());
  Gate never;
  const auto stuck = [&](const rt::TaskContext& ctx) { never.wait(ctx); };
  rt::BatchOptions options;
  options.deadline = 20ms;

  asio::io_context io;
  std::exception_ptr error;
  const auto start = std::chrono::steady_clock::now();
  rt::async_run(
      scheduler, 4, stuck, options,
      asio::bind_executor(io, [&](std::exception_ptr e, rt::BatchResult<void>) { error = e; }));
  io.run();
  CHECK(std::chrono::steady_clock::now() - start >= 20ms);
  CHECK(is_code(error, asio::error::timed_out));

  REQUIRE_THROWS_MATCHES(scheduler.run(4, stuck, options), rt::DeadlineError,
                         Catch::Matchers::MessageMatches(ContainsSubstring("deadline of 20 ms")));
  // A batch done before its deadline is not affected.
  options.deadline = 10s;
  CHECK(scheduler.run(4, kSquare, options).values.size() == 4);
  CHECK(policy.all_stats()[0].count() + policy.all_stats()[1].count() == 4);
}

TEST_CASE("pool shutdown with asynchronous batches in flight: each completes with an error",
          "[async]") {
  auto pool = std::make_unique<rt::WorkerPool>(2);
  ata::UniformPolicy policy(2);
  rt::BatchScheduler scheduler(*pool, policy, rt::SchedulerOptions{}.set_max_in_flight(2));
  Gate never;
  asio::io_context io;
  std::atomic<int> completed{0};
  std::atomic<int> errors{0};
  for (int k = 0; k < 6; ++k) {
    rt::async_run(
        scheduler, 3, [&](const rt::TaskContext& ctx) { never.wait(ctx); },
        asio::bind_executor(io, [&](std::exception_ptr e, rt::BatchResult<void>) {
          completed.fetch_add(1);
          if (e) errors.fetch_add(1);
        }));
  }
  std::jthread stopper([&] {
    std::this_thread::sleep_for(20ms);
    pool->shutdown();
  });
  io.run();
  CHECK(completed.load() == 6);
  CHECK(errors.load() == 6);
  CHECK(scheduler.in_flight() == 0);
}

TEST_CASE("an io_context destroyed with an admitted batch's launch posted gives its slot back",
          "[async][errors]") {
  rt::WorkerPool pool(2);
  ata::UniformPolicy policy(2);
  rt::BatchScheduler scheduler(pool, policy, rt::SchedulerOptions{}.set_max_in_flight(1));
  Gate gate;
  std::atomic<bool> holding{false};
  // The slot's holder: a blocking batch whose task waits.
  auto holder = std::async(std::launch::async, [&] {
    (void)scheduler.run(1, [&](const rt::TaskContext& ctx) {
      holding = true;
      gate.wait(ctx);
    });
  });
  while (!holding.load()) std::this_thread::sleep_for(1ms);
  std::atomic<int> handled{0};
  {
    asio::io_context io;  // never run: the launch step waits in it
    rt::async_run(scheduler, 2, kSquare,
                  asio::bind_executor(io, [&](std::exception_ptr, rt::BatchResult<std::size_t>) {
                    handled.fetch_add(1);
                  }));
    CHECK(scheduler.in_flight() == 1);
    // Freeing the slot admits the queued batch: its launch is posted to `io` by then.
    gate.open();
    holder.get();
    CHECK(scheduler.in_flight() == 1);
  }  // destroyed with the launch step queued, unrun: the handler goes with it
  CHECK(handled.load() == 0);
  REQUIRE(scheduler.in_flight() == 0);
  // The slot is free: a blocking batch runs rather than waiting for it forever.
  const auto result = scheduler.run(
      3, kSquare, rt::BatchOptions{.deadline = std::chrono::milliseconds(500)});
  check_squares(result.values, 3);
}

TEST_CASE("B = 0 completes with InvalidArgument through the handler", "[async][errors]") {
  rt::WorkerPool pool(1);
  ata::UniformPolicy policy(1);
  rt::BatchScheduler scheduler(pool, policy, ata::testing::without_backups());
  auto future = rt::async_run(scheduler, 0, kSquare, asio::use_future);
  REQUIRE_THROWS_AS(future.get(), ata::InvalidArgument);
  REQUIRE_THROWS_AS(rt::SchedulerOptions{}.set_max_in_flight(0), ata::InvalidArgument);
}

TEST_CASE("load-aware allocation sends a batch around a busy worker", "[async][runtime]") {
  for (const bool load_aware : {true, false}) {
    CAPTURE(load_aware);
    rt::WorkerPool pool(2);
    ata::OraclePolicy oracle(std::vector<double>{1.0, 1.0});
    // Without backups: a lane stuck at the gate would be quarantined, load awareness or not.
    rt::BatchScheduler scheduler(
        pool, oracle,
        ata::testing::without_backups().set_load_aware(load_aware));
    Gate gate;
    std::atomic<int> done_on_worker_1{0};
    // Batch A: {2, 2}; worker 0's two tasks wait at the gate, worker 1's finish.
    auto first = rt::async_run(
        scheduler, 4,
        [&](const rt::TaskContext& ctx) {
          if (ctx.worker() == 0) {
            gate.wait(ctx);
          } else {
            done_on_worker_1.fetch_add(1);
          }
        },
        asio::use_future);
    while (done_on_worker_1.load() < 2) std::this_thread::yield();
    // Batch B: worker 0 still owes 2 tasks, so B goes to worker 1 and completes at once.
    auto second = rt::async_run(scheduler, 2, kSquare, asio::use_future);
    if (load_aware) {
      REQUIRE(second.wait_for(10s) == std::future_status::ready);
      const auto result = second.get();
      CHECK(std::vector<std::size_t>(result.report.allocation.begin(),
                                     result.report.allocation.end()) ==
            std::vector<std::size_t>{0, 2});
      gate.open();
    } else {
      // Without load awareness B gets {1, 1} and waits behind worker 0's backlog.
      CHECK(second.wait_for(50ms) == std::future_status::timeout);
      gate.open();
      const auto result = second.get();
      CHECK(std::vector<std::size_t>(result.report.allocation.begin(),
                                     result.report.allocation.end()) ==
            std::vector<std::size_t>{1, 1});
    }
    first.get();
  }
}

TEST_CASE("an observer hears asynchronous batches: succeeded, and cancelled mid-batch",
          "[async][observer]") {
  // Events as text, in the order they came.
  class Log final : public rt::Observer {
   public:
    void on_batch_start(const rt::BatchStart& start) noexcept override {
      add("start " + std::to_string(start.round));
    }
    void on_learned(std::size_t round, std::span<const ata::WorkerStats>) noexcept override {
      add("learned " + std::to_string(round));
    }
    void on_batch_end(const rt::BatchEnd& end) noexcept override {
      add("end " + std::to_string(end.round) + " " + rt::outcome_name(end.outcome) +
          (end.report != nullptr ? " tasks " + std::to_string(end.report->tasks.size()) : ""));
    }
    std::vector<std::string> events() {
      std::lock_guard lock(mutex_);
      return events_;
    }

   private:
    void add(std::string event) {
      std::lock_guard lock(mutex_);
      events_.push_back(std::move(event));
    }
    std::mutex mutex_;
    std::vector<std::string> events_;
  };
  rt::WorkerPool pool(2);
  ata::UniformPolicy policy(2);
  rt::BatchScheduler scheduler(pool, policy, ata::testing::without_backups());
  Log log;
  scheduler.set_observer(&log);
  check_squares(rt::async_run(scheduler, 6, kSquare, asio::use_future).get().values, 6);

  asio::io_context io;
  Gate gate;
  std::atomic<int> started{0};
  asio::cancellation_signal signal;
  std::exception_ptr error;
  rt::async_run(
      scheduler, 2,
      [&](const rt::TaskContext& ctx) {
        started.fetch_add(1);
        gate.wait(ctx);
      },
      asio::bind_cancellation_slot(
          signal.slot(), asio::bind_executor(io, [&](std::exception_ptr e, rt::BatchResult<void>) {
            error = e;
          })));
  while (started.load() < 2) std::this_thread::yield();
  signal.emit(asio::cancellation_type::terminal);
  io.run();
  CHECK(is_code(error, asio::error::operation_aborted));
  CHECK(log.events() == std::vector<std::string>{"start 1", "learned 1", "end 1 succeeded tasks 6",
                                                 "start 2", "end 2 cancelled"});
}

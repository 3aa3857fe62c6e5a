// [lanes] on AsioLanes: an io_context per lane, one thread_pool shared by every lane, strands
// on a shared pool; async_run on them, cancellation, and the executors' own threads. Runs
// under ThreadSanitizer (scripts/test). The kinds are in asio_lane_kinds.hpp, the shared
// scenarios in lane_scenarios.hpp.
#include <utility>  // before Asio (g++ 12)

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/system/system_error.hpp>
#include <optional>
#include <tuple>
#include <type_traits>
#include <vector>

#include "ata/runtime/asio_lanes.hpp"
#include "ata/runtime/async_run.hpp"
#include "lanes/asio_lane_kinds.hpp"
#include "lanes/lane_kinds.hpp"

using LaneKinds = std::tuple<ata::testing::AsioContextPerLane, ata::testing::AsioSharedPool,
                             ata::testing::AsioStrands>;
#define ATA_LANES_TAG "[asio]"
#define ATA_LANES_PREFIX "asio lanes: "
#include "lanes/lane_scenarios.hpp"
#include "support/without_backups.hpp"

namespace ata::testing::lanes {

namespace {

bool is_code(const std::exception_ptr& error, boost::system::error_code code) {
  try {
    if (error) std::rethrow_exception(error);
  } catch (const boost::system::system_error& e) {
    return e.code() == code;
  } catch (...) {
  }
  return false;
}

}  // namespace

TEMPLATE_LIST_TEST_CASE("asio lanes: async_run in every mode, and cancelled mid-batch",
                        "[lanes][asio][async]", LaneKinds) {
  const std::string name = GENERATE("uta", "ata-auto", "gta", "pull");
  CAPTURE(TestType::name, name);
  TestType kind;
  auto lanes = kind.make(rt::LaneOptions(3));
  auto policy = ata::make_policy(name, 3);
  rt::BatchScheduler scheduler(*lanes, *policy, without_backups());
  // Completions on an io_context of the test's own.
  asio::io_context io;
  auto guard = asio::make_work_guard(io);
  std::thread completions([&] { io.run(); });

  // Many batches in flight at once, each one result per index.
  constexpr std::size_t kBatches = 12;
  std::vector<std::unique_ptr<Calls>> calls;
  std::vector<std::future<rt::BatchResult<std::size_t>>> results;
  for (std::size_t b = 0; b < kBatches; ++b) {
    calls.push_back(std::make_unique<Calls>(3));
    results.push_back(rt::async_run(
        scheduler, 1 + b,
        [c = calls.back().get()](const rt::TaskContext& ctx) {
          c->note(ctx);
          return ctx.task() * ctx.task();
        },
        asio::bind_executor(io, asio::use_future)));
  }
  for (std::size_t b = 0; b < kBatches; ++b) calls[b]->check(results[b].get(), 1 + b);

  // Cancelled while its tasks wait: it completes with operation_aborted, and stops them.
  Gate never;
  std::atomic<int> started = 0;
  asio::cancellation_signal signal;
  // Read on the handler's thread: the exception object stays there (libstdc++'s reference
  // count on it is not instrumented for TSan).
  std::promise<bool> aborted;
  rt::async_run(
      scheduler, 6,
      [&](const rt::TaskContext& ctx) {
        started.fetch_add(1);
        never.wait(ctx);
      },
      asio::bind_cancellation_slot(
          signal.slot(),
          asio::bind_executor(io, [&](std::exception_ptr error, rt::BatchResult<void>) {
            aborted.set_value(is_code(error, asio::error::operation_aborted));
          })));
  REQUIRE(eventually([&] { return started.load() >= 1; }));
  // The slot belongs to the handler's executor: emit there.
  asio::post(io, [&] { signal.emit(asio::cancellation_type::terminal); });
  auto cancelled = aborted.get_future();
  REQUIRE(cancelled.wait_for(10s) == std::future_status::ready);
  CHECK(cancelled.get());
  // The lanes run on.
  Calls after(3);
  const auto result = scheduler.run(9, [&](const rt::TaskContext& ctx) {
    after.note(ctx);
    return ctx.task() * ctx.task();
  });
  after.check(result, 9);
  // A lane may still be inside its post() of a completion to `io` after the handler ran:
  // the lanes go first (they wait for their chunks), then `io`.
  lanes.reset();
  guard.reset();
  completions.join();
}

TEST_CASE("asio lanes: an executor thread outside a task may run a batch on other threads",
          "[lanes][asio]") {
  // Lanes on 2 of the pool's 3 threads: the third, in a handler of its own, waits for a batch.
  asio::thread_pool pool(3);
  rt::AsioLanes lanes(std::vector<asio::any_io_executor>(2, pool.get_executor()));
  ata::UniformPolicy policy(2);
  rt::BatchScheduler scheduler(lanes, policy, ata::testing::without_backups());
  std::promise<std::vector<std::size_t>> values;
  asio::post(pool, [&] {
    values.set_value(
        scheduler.run(4, [](const rt::TaskContext& ctx) { return ctx.task(); }).values);
  });
  auto ready = values.get_future();
  REQUIRE(ready.wait_for(10s) == std::future_status::ready);
  CHECK(ready.get() == std::vector<std::size_t>{0, 1, 2, 3});
  pool.join();
}

TEST_CASE("asio lanes: a stopped io_context fails the batch when it drops the work",
          "[lanes][asio][errors]") {
  auto io = std::make_optional<asio::io_context>();  // never run
  rt::AsioLanes lanes({io->get_executor()});
  ata::UniformPolicy policy(1);
  rt::BatchScheduler scheduler(lanes, policy, ata::testing::without_backups());
  const auto submit = [&] {
    return std::async(std::launch::async,
                      [&] { return scheduler.run(2, [](const rt::TaskContext&) {}); });
  };
  auto first = submit();
  REQUIRE(eventually([&] { return lanes.queued_chunks() == 1; }));
  // The first batch's chunk is queued before its run is posted to the io_context, which must
  // outlive that post. Submissions are ordered as a whole: once a second batch is queued, the
  // first submission, post included, is over (the second posts nothing: a run is pending).
  auto second = submit();
  REQUIRE(eventually([&] { return lanes.queued_chunks() == 2; }));
  io.reset();  // destroys the posted run unrun
  for (auto* pending : {&first, &second}) {
    CHECK_THROWS_MATCHES(pending->get(), ata::Error,
                         MessageMatches(ContainsSubstring("dropped the work unrun")));
  }
}

TEST_CASE("asio lanes: no executors, or an empty one, are refused", "[lanes][asio][errors]") {
  asio::thread_pool pool(1);
  CHECK_THROWS_MATCHES(rt::AsioLanes(std::vector<asio::any_io_executor>{}), ata::InvalidArgument,
                       MessageMatches(ContainsSubstring("got no executor")));
  CHECK_THROWS_MATCHES(rt::AsioLanes(std::vector<asio::any_io_executor>{pool.get_executor(), {}}),
                       ata::InvalidArgument,
                       MessageMatches(ContainsSubstring("executor 1 is empty")));
  CHECK_THROWS_MATCHES(
      rt::AsioLanes(std::vector<asio::any_io_executor>(3, pool.get_executor()), rt::LaneOptions(2)),
      ata::InvalidArgument,
      MessageMatches(ContainsSubstring("3 launchers for options of 2 workers")));
  // The executors' threads are not the lanes' to pin: PoolOptions do not compile here.
  static_assert(!std::is_constructible_v<rt::AsioLanes, std::vector<asio::any_io_executor>,
                                         const rt::PoolOptions&>);
  static_assert(std::is_constructible_v<rt::AsioLanes, std::vector<asio::any_io_executor>,
                                        const rt::LaneOptions&>);
  pool.join();
}

}  // namespace ata::testing::lanes

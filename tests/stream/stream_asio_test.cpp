// [stream] on the AsioLanes kinds: an io_context per lane, one thread_pool, a strand per lane
// (tests/lanes/asio_lane_kinds.hpp). Also run under ThreadSanitizer.
#include <tuple>

#include "lanes/asio_lane_kinds.hpp"

using LaneKinds = std::tuple<ata::testing::AsioContextPerLane, ata::testing::AsioSharedPool,
                             ata::testing::AsioStrands>;
#define ATA_STREAM_TAG "[asio]"
#define ATA_STREAM_PREFIX "stream, asio lanes: "
#include "stream/stream_scenarios.hpp"
#include "stream/stream_observer_scenarios.hpp"

// async_run_stream(): the Asio front end, on a WorkerPool and on Asio lanes.
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <future>
#include <optional>

#include "ata/runtime/async_stream.hpp"

namespace ata::testing::stream {
namespace {

// A consumer that checks tags, advances at each completed task and ends at `deliveries`.
struct Counting {
  std::shared_ptr<Ledger> ledger;
  std::size_t deliveries;
  rt::StreamVerdict operator()(rt::StreamDelivery<std::uint64_t>& d) const {
    ledger->note(d, !d.has_value() || d.value() == d.start_version());
    if (d.completed()) d.advance();
    if (ledger->seen().size() == deliveries) d.end_stream();
    ledger->set_version_after(d.version());
    return d.completed() ? rt::StreamVerdict::accept : rt::StreamVerdict::reject;
  }
};

struct Tagging {
  std::shared_ptr<Ledger> ledger;
  std::uint64_t operator()(const rt::StreamContext& ctx) const {
    ledger->started();
    return ctx.version();
  }
};

}  // namespace

TEST_CASE("async_run_stream completes a handler, a future and a coroutine with the report",
          "[runtime][stream][async]") {
  rt::WorkerPool pool(2);
  rt::TaskStream stream(pool);
  asio::io_context io;

  SECTION("a completion handler on an io_context") {
    auto ledger = std::make_shared<Ledger>();
    std::optional<rt::StreamReport> report;
    std::exception_ptr error;
    rt::async_run_stream(stream, Tagging{ledger}, Counting{ledger, 100},
                         asio::bind_executor(io, [&](std::exception_ptr e, rt::StreamReport r) {
                           error = e;
                           report = std::move(r);
                         }));
    CHECK_FALSE(report);  // never inline
    io.run();             // returns once the handler has run: the stream is io's work
    REQUIRE(report);
    CHECK_FALSE(error);
    CHECK(report->end == rt::StreamEnd::consumer);
    CHECK(ledger->problem() == "");
    CHECK(report_problem(*report, *ledger) == "");
  }
  SECTION("use_future") {
    auto ledger = std::make_shared<Ledger>();
    auto future = rt::async_run_stream(stream, Tagging{ledger}, Counting{ledger, 50},
                                       rt::StreamOptions{}.set_stale_bound(3), asio::use_future);
    const rt::StreamReport report = future.get();
    CHECK(report.end == rt::StreamEnd::consumer);
    CHECK(ledger->problem() == "");
    CHECK(report_problem(report, *ledger) == "");
  }
  SECTION("use_awaitable, several streams at once") {
    constexpr int kStreams = 4;
    std::vector<std::string> problems(kStreams, "not run");
    for (int s = 0; s < kStreams; ++s) {
      asio::co_spawn(
          io,
          [&, s]() -> asio::awaitable<void> {
            auto ledger = std::make_shared<Ledger>();
            // Named, not temporaries of the co_await expression: with temporaries, g++ 12's
            // coroutine freed the ledger early here (ThreadSanitizer: a use after free).
            const Tagging task{ledger};
            const Counting consumer{ledger, 30 + 10 * static_cast<std::size_t>(s)};
            const auto report =
                co_await rt::async_run_stream(stream, task, consumer, asio::use_awaitable);
            problems[s] = ledger->problem();
            if (problems[s].empty()) problems[s] = report_problem(report, *ledger);
          },
          asio::detached);
    }
    io.run();
    for (int s = 0; s < kStreams; ++s) CHECK(problems[s] == "");
  }
}

TEST_CASE("async_run_stream: a cancellation ends the stream as a stop; errors complete it",
          "[runtime][stream][async][errors]") {
  rt::WorkerPool pool(2);
  rt::TaskStream stream(pool);
  asio::io_context io;
  std::optional<rt::StreamReport> report;
  std::exception_ptr error;
  const auto keep = [&](std::exception_ptr e, rt::StreamReport r) {
    error = e;
    report = std::move(r);
  };

  SECTION("cancelled while its tasks wait for their stop") {
    auto ledger = std::make_shared<Ledger>();
    asio::cancellation_signal signal;
    rt::async_run_stream(
        stream,
        [ledger](const rt::StreamContext& ctx) {
          ledger->started();
          wait_for_stop(ctx);
        },
        [ledger](rt::StreamDelivery<void>& d) {
          ledger->record(d);
          return rt::StreamVerdict::accept;
        },
        asio::bind_cancellation_slot(signal.slot(), asio::bind_executor(io, keep)));
    REQUIRE(eventually([&] { return ledger->tasks_started() == 2; }));
    signal.emit(asio::cancellation_type::terminal);
    io.run();
    REQUIRE(report);
    CHECK_FALSE(error);
    CHECK(report->end == rt::StreamEnd::stop_requested);
    CHECK(report->stopped == 2);
    CHECK(ledger->problem() == "");
  }
  SECTION("a worker out of range") {
    rt::async_run_stream(
        stream, [](const rt::StreamContext&) {},
        [](rt::StreamDelivery<void>&) { return rt::StreamVerdict::accept; },
        rt::StreamOptions{}.set_workers({7}), asio::bind_executor(io, keep));
    io.run();
    REQUIRE(error);
    CHECK_THROWS_AS(std::rethrow_exception(error), ata::InvalidArgument);
  }
  SECTION("lanes shut down mid-stream") {
    std::atomic<int> started = 0;
    rt::async_run_stream(
        stream,
        [&](const rt::StreamContext& ctx) {
          started.fetch_add(1);
          wait_for_stop(ctx);
        },
        [](rt::StreamDelivery<void>&) { return rt::StreamVerdict::accept; },
        asio::bind_executor(io, keep));
    REQUIRE(eventually([&] { return started.load() == 2; }));
    pool.shutdown();
    io.run();
    REQUIRE(error);
    CHECK_THROWS_AS(std::rethrow_exception(error), rt::ShutdownError);
  }
}

TEMPLATE_LIST_TEST_CASE(ATA_STREAM_PREFIX "async_run_stream runs on the kind's lanes",
                        "[runtime][stream][async]" ATA_STREAM_TAG, LaneKinds) {
  StreamRig<TestType> rig(3);
  CAPTURE(TestType::name);
  rt::TaskStream& stream = rig.stream;
  auto ledger = std::make_shared<Ledger>();
  auto future = rt::async_run_stream(stream, Tagging{ledger}, Counting{ledger, 200},
                                     asio::use_future);
  const rt::StreamReport report = future.get();
  CHECK(ledger->problem() == "");
  CHECK(report_problem(report, *ledger) == "");
}

TEMPLATE_LIST_TEST_CASE(ATA_STREAM_PREFIX
                        "async_run_stream tells the observer every delivery and the end before "
                        "its handler runs",
                        "[runtime][stream][async][observer]" ATA_STREAM_TAG, LaneKinds) {
  StreamRig<TestType> rig(3);
  CAPTURE(TestType::name);
  StreamEvents events;
  rig.stream.set_observer(&events);
  asio::io_context io;
  auto ledger = std::make_shared<Ledger>();
  std::string order_at_handler = "handler not run";
  std::size_t events_at_handler = 0;
  std::optional<rt::StreamReport> report;
  rt::async_run_stream(rig.stream, Tagging{ledger}, Counting{ledger, 100},
                       asio::bind_executor(io, [&](std::exception_ptr, rt::StreamReport r) {
                         order_at_handler = events.order_problem();
                         events_at_handler = events.events().size();
                         report = std::move(r);
                       }));
  io.run();
  REQUIRE(report);
  CHECK(order_at_handler == "");
  CHECK(events_at_handler == report->started + 2);
  CHECK(ledger->problem() == "");
  // The task events are the consumer's deliveries, in its order.
  const auto tasks = events.tasks(1);
  REQUIRE(tasks.size() == ledger->seen().size());
  for (std::size_t k = 0; k < tasks.size(); ++k) {
    const Seen& seen = ledger->seen()[k];
    CHECK(std::get<0>(tasks[k]) == seen.task);
    CHECK(std::get<1>(tasks[k]) == seen.worker);
    CHECK(std::get<2>(tasks[k]) == seen.start_version);
    CHECK(std::get<3>(tasks[k]) == seen.delay);
    CHECK(std::get<5>(tasks[k]) == seen.duration);
    CHECK(std::get<6>(tasks[k]) == seen.outcome);
    CHECK(std::get<7>(tasks[k]) == (seen.outcome == rt::StreamOutcome::completed));
  }
}

}  // namespace ata::testing::stream

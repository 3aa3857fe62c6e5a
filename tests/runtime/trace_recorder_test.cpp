#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <limits>
#include <map>
#include <stdexcept>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "ata/ata.hpp"
#include "support/trace_flows.hpp"
#include "support/without_backups.hpp"

using namespace std::chrono_literals;
namespace rt = ata::runtime;
using ata::testing::records_of;
using ata::testing::slices_of;

namespace {

std::vector<std::size_t> traced_rounds(const nlohmann::json& trace) {
  std::vector<std::size_t> rounds;
  for (const auto& event : trace["traceEvents"]) {
    if (event["ph"] == "X" && event["cat"] == "round") rounds.push_back(event["args"]["round"]);
  }
  return rounds;
}

}  // namespace

TEST_CASE("the trace keeps the first and last batches, each task once, on its worker's track",
          "[runtime][observer][trace]") {
  const std::string name = GENERATE(std::string("uta"), std::string("pull"), std::string("gta"));
  rt::WorkerPool pool(2);
  auto policy = ata::make_policy(name, 2);
  rt::BatchScheduler scheduler(pool, *policy, ata::testing::without_backups());
  rt::TraceRecorder recorder(2, 3);
  scheduler.set_observer(&recorder);
  std::map<std::size_t, rt::RoundReport> reports;
  for (int k = 0; k < 10; ++k) {
    auto report =
        scheduler.run(6, [](const rt::TaskContext&) { std::this_thread::sleep_for(50us); }).report;
    reports[report.round] = std::move(report);
  }
  CHECK(recorder.batches_seen() == 10);
  CHECK(recorder.dropped() == 0);
  const rt::TracedProcess process{name, 2, recorder.batches()};
  rt::TraceCounts size;
  const auto trace = nlohmann::json::parse(rt::chrome_trace_json({&process, 1}, &size));
  CHECK(traced_rounds(trace) == std::vector<std::size_t>{1, 2, 8, 9, 10});
  CHECK(size.batches == 5);
  CHECK(size.unplaced == 0);
  CHECK(size.events == trace["traceEvents"].size());
  std::size_t slices = 0;
  for (const std::size_t round : {1, 2, 8, 9, 10}) {
    const auto spans = slices_of(trace, round);
    CHECK(spans == records_of(reports.at(round)));
    slices += spans.size();
  }
  CHECK(size.slices == slices);
  // Each batch is a flow: one arrow from its round's slice to each of its task slices.
  CHECK(ata::testing::check_batch_flows(trace, 2) == slices);
  // Times from the first batch's start: the first slice of round 1 starts near 0, and the
  // rounds follow one another.
  double previous = -1.0;
  for (const auto& event : trace["traceEvents"]) {
    if (event["ph"] != "X" || event["cat"] != "round") continue;
    CHECK(event["ts"].get<double>() > previous);
    previous = event["ts"].get<double>();
  }
}

TEST_CASE("a fungible race's surplus copy is marked discarded", "[runtime][observer][trace]") {
  rt::WorkerPool pool(2);
  auto policy = ata::make_policy("gta", 2);
  rt::BatchScheduler scheduler(pool, *policy, ata::testing::without_backups());
  rt::TraceRecorder recorder(1, 0);
  scheduler.set_observer(&recorder);
  // B = 1: task 0 ends only once task 1 has started, and task 1 runs until it is stopped, so
  // both run and task 1 is the surplus.
  std::atomic<bool> second_started{false};
  const auto report = scheduler.run(1, [&](const rt::TaskContext& ctx) {
    if (ctx.task() == 0) {
      const auto give_up = std::chrono::steady_clock::now() + 10s;
      while (!second_started && std::chrono::steady_clock::now() < give_up) {
        std::this_thread::sleep_for(100us);
      }
    } else {
      second_started = true;
      while (!ctx.stop_requested()) std::this_thread::sleep_for(100us);
    }
  }).report;
  REQUIRE(report.tasks.size() == 2);
  const rt::TracedProcess process{"gta", 2, recorder.batches()};
  rt::TraceCounts size;
  const auto trace = nlohmann::json::parse(rt::chrome_trace_json({&process, 1}, &size));
  CHECK(size.slices == 2);
  CHECK(slices_of(trace, 1) == records_of(report));
  CHECK(ata::testing::check_batch_flows(trace, 2) == 2);
  std::size_t discarded = 0;
  for (const auto& event : trace["traceEvents"]) {
    if (event["ph"] != "X" || event["cat"] != "discarded") continue;
    ++discarded;
    CHECK(event["name"] == "task 1 (discarded)");
  }
  CHECK(discarded == 1);
}

TEST_CASE("tracked copies are placed, the failed attempt marked discarded",
          "[runtime][observer][trace]") {
  rt::WorkerPool pool(2);
  ata::UniformPolicy policy(2);
  rt::BatchScheduler scheduler(pool, policy, ata::testing::without_backups().set_retries(1));
  rt::TraceRecorder recorder(4, 0);
  scheduler.set_observer(&recorder);
  std::atomic<bool> failed{false};
  const auto report = scheduler.run(4, [&](const rt::TaskContext& ctx) {
    if (ctx.task() == 0 && !failed.exchange(true)) throw std::runtime_error("first attempt");
  }).report;
  REQUIRE(report.tasks.size() == 5);  // 4 accepted, 1 failed attempt
  for (const rt::TaskRecord& task : report.tasks) {
    REQUIRE(task.has_start());
    CHECK(task.start >= std::chrono::nanoseconds{0});
  }
  rt::TracedProcess process{"retries", 2, recorder.batches()};
  rt::TraceCounts size;
  const auto trace = nlohmann::json::parse(rt::chrome_trace_json({&process, 1}, &size));
  CHECK(size.unplaced == 0);
  CHECK(size.slices == 5);
  CHECK(slices_of(trace, 1) == records_of(report));
  CHECK(ata::testing::check_batch_flows(trace, 2) == 5);
  // Task 0 ran twice: both copies say so, the failed attempt is marked discarded.
  std::map<std::string, std::size_t> names;
  for (const auto& event : trace["traceEvents"]) {
    if (event["ph"] == "X" && event["cat"] != "round") ++names[event["name"]];
  }
  CHECK(names == std::map<std::string, std::size_t>{{"task 0 (2 copies, discarded)", 1},
                                                    {"task 0 (2 copies)", 1},
                                                    {"task 1", 1},
                                                    {"task 2", 1},
                                                    {"task 3", 1}});
  CHECK(traced_rounds(trace) == std::vector<std::size_t>{1});
  process.workers = 1;
  CHECK_THROWS_AS(rt::chrome_trace_json({&process, 1}), ata::InvalidArgument);
}

TEST_CASE("a trace recorder too large to allocate is refused with a sentence",
          "[runtime][observer][trace][errors]") {
  CHECK_THROWS_WITH(rt::TraceRecorder(std::numeric_limits<std::size_t>::max(), 1),
                    Catch::Matchers::ContainsSubstring("out of memory for a trace of the first "));
}

TEST_CASE("a stream's trace keeps its first and last tasks, of the first and last streams",
          "[runtime][observer][trace][stream]") {
  rt::WorkerPool pool(2);
  rt::TaskStream stream(pool);
  rt::TraceRecorder recorder(1, 1, rt::StreamTraceBound{3, 4});
  stream.set_observer(&recorder);
  // Worker 0 alone: its tasks are delivered in start order, 0 to 19.
  const auto twenty = [](rt::StreamDelivery<void>& d) {
    d.advance();
    if (d.task() == 19) d.end_stream();
    return rt::StreamVerdict::accept;
  };
  for (int s = 0; s < 3; ++s) {
    stream.run([](const rt::StreamContext&) {}, twenty, rt::StreamOptions{}.set_workers({0}));
  }
  CHECK(recorder.streams_seen() == 3);
  CHECK(recorder.dropped() == 0);
  const auto streams = recorder.streams();
  REQUIRE(streams.size() == 2);
  CHECK(streams[0].stream == 1);
  CHECK(streams[1].stream == 3);  // stream 2's slot was the ring's, taken by stream 3
  for (const rt::TracedStream& traced : streams) {
    CHECK(traced.ended);
    CHECK_FALSE(traced.failed);
    CHECK(traced.end == rt::StreamEnd::consumer);
    CHECK(traced.delivered == 20);
    std::vector<std::size_t> kept;
    for (const rt::StreamTaskRecord& task : traced.tasks) {
      kept.push_back(task.task);
      CHECK(task.worker == 0);
      CHECK(task.start_version == task.task);  // one advance per delivery, one worker
      CHECK(task.delay == 0);
      CHECK(task.accepted);
    }
    CHECK(kept == std::vector<std::size_t>{0, 1, 2, 16, 17, 18, 19});
  }
  // A task on a worker the process does not have is refused by name.
  const rt::TracedProcess narrow{"narrow", 0, {}, streams};
  CHECK_THROWS_WITH(rt::chrome_trace_json({&narrow, 1}),
                    Catch::Matchers::ContainsSubstring("stream 1 has a task on worker 0 of 0"));
}

TEST_CASE("batches and a stream on the same lanes share one recorder and one process",
          "[runtime][observer][trace][stream]") {
  rt::WorkerPool pool(2);
  ata::UniformPolicy policy(2);
  rt::BatchScheduler scheduler(pool, policy, ata::testing::without_backups());
  rt::TaskStream stream(pool);
  rt::TraceRecorder recorder(5, 5);
  scheduler.set_observer(&recorder);
  stream.set_observer(&recorder);
  std::map<std::size_t, rt::RoundReport> reports;
  for (int k = 0; k < 3; ++k) {
    auto report = scheduler.run(4, [](const rt::TaskContext&) {}).report;
    reports[report.round] = std::move(report);
  }
  // A slice is "rejected" for a completed task the consumer rejected; one stopped by the
  // stream's end is "stopped", whatever the verdict.
  std::size_t completed_rejected = 0;
  const auto report = stream.run([](const rt::StreamContext&) {},
                                 [&](rt::StreamDelivery<void>& d) {
                                   // From the first delivery past 30: task 30's own may
                                   // come late (its lane without a core), and a stream of
                                   // more than 2,000 tasks would outgrow the recorder.
                                   if (d.task() >= 30) d.end_stream();
                                   const bool accept = d.task() % 2 == 0;
                                   if (!accept && d.outcome() == rt::StreamOutcome::completed) {
                                     ++completed_rejected;
                                   }
                                   return accept ? rt::StreamVerdict::accept
                                                 : rt::StreamVerdict::reject;
                                 });
  const rt::TracedProcess process{"both", 2, recorder.batches(), recorder.streams()};
  rt::TraceCounts counts;
  const auto trace = nlohmann::json::parse(rt::chrome_trace_json({&process, 1}, &counts));
  CHECK(counts.batches == 3);
  CHECK(counts.streams == 1);
  CHECK(counts.slices == 12 + report.started);
  // The batches' checks hold beside the stream's slices, which have no flows.
  for (const auto& [round, batch] : reports) CHECK(slices_of(trace, round) == records_of(batch));
  CHECK(ata::testing::check_batch_flows(trace, 2) == 12);
  std::size_t rejected = 0;
  for (const auto& event : trace["traceEvents"]) {
    if (event["ph"] == "X" && event["cat"] == "rejected") ++rejected;
  }
  CHECK(rejected == completed_rejected);
  CHECK(rejected <= report.rejected);
}

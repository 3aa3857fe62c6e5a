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

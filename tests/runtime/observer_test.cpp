#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <mutex>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "ata/ata.hpp"
#include "support/without_backups.hpp"

using namespace std::chrono_literals;
namespace rt = ata::runtime;

namespace {

// Keeps every event, in order, as a line of text plus the reports' copies.
class EventLog final : public rt::Observer {
 public:
  void on_batch_start(const rt::BatchStart& start) noexcept override {
    std::lock_guard lock(mutex_);
    events.push_back("start " + std::to_string(start.round) + " B=" +
                     std::to_string(start.tasks) + " " +
                     std::string(ata::dispatch_name(start.plan.dispatch())));
  }
  void on_learned(std::size_t round, std::span<const ata::WorkerStats> learned) noexcept override {
    std::lock_guard lock(mutex_);
    events.push_back("learned " + std::to_string(round));
    learned_counts.clear();
    for (const ata::WorkerStats& worker : learned) learned_counts.push_back(worker.count());
  }
  void on_batch_end(const rt::BatchEnd& end) noexcept override {
    std::lock_guard lock(mutex_);
    events.push_back("end " + std::to_string(end.round) + " " + rt::outcome_name(end.outcome));
    if (end.report != nullptr) reports.push_back(*end.report);
  }

  std::mutex mutex_;
  std::vector<std::string> events;
  std::vector<std::size_t> learned_counts;
  std::vector<rt::RoundReport> reports;
};

// Every record has a start, and on each worker the tasks do not overlap and end within the
// batch's wall time.
void check_spans(const rt::RoundReport& report, std::size_t workers) {
  std::vector<std::chrono::nanoseconds> free_from(workers, std::chrono::nanoseconds{0});
  std::vector<const rt::TaskRecord*> by_start;
  for (const rt::TaskRecord& task : report.tasks) {
    REQUIRE(task.has_start());
    CHECK(task.start >= std::chrono::nanoseconds{0});
    CHECK(task.start + task.duration <= report.wall);
    by_start.push_back(&task);
  }
  std::sort(by_start.begin(), by_start.end(),
            [](const rt::TaskRecord* a, const rt::TaskRecord* b) { return a->start < b->start; });
  for (const rt::TaskRecord* task : by_start) {
    REQUIRE(task->worker < workers);
    CHECK(task->start >= free_from[task->worker]);
    free_from[task->worker] = task->start + task->duration;
  }
}

// Two workers under UTA, every batch told to an EventLog. Without backups, so that the counts
// are exact: the default hedging copies a task of 100 us that a loaded machine holds past its
// 1 ms floor (seen in CI: 9 records for 8 tasks).
struct Watched {
  Watched() { scheduler.set_observer(&log); }
  rt::WorkerPool pool{2};
  ata::UniformPolicy policy{2};
  rt::BatchScheduler scheduler{pool, policy, ata::testing::without_backups()};
  EventLog log;
};

}  // namespace

TEST_CASE("an observer hears each batch's start, what the policy learned, and its end, in order",
          "[runtime][observer]") {
  Watched watched;
  rt::BatchScheduler& scheduler = watched.scheduler;
  EventLog& log = watched.log;
  for (int k = 0; k < 2; ++k) {
    scheduler.run(8, [](const rt::TaskContext&) { std::this_thread::sleep_for(100us); });
  }
  const std::vector<std::string> expected = {"start 1 B=8 allocated", "learned 1",
                                             "end 1 succeeded",       "start 2 B=8 allocated",
                                             "learned 2",             "end 2 succeeded"};
  CHECK(log.events == expected);
  CHECK(log.learned_counts == std::vector<std::size_t>{8, 8});  // 4 + 4 per worker
  REQUIRE(log.reports.size() == 2);
  for (const rt::RoundReport& report : log.reports) {
    REQUIRE(report.tasks.size() == 8);
    check_spans(report, 2);
  }
  CHECK(log.reports[1].start > log.reports[0].start);
}

TEST_CASE("pull and greedy batches record every task's start", "[runtime][observer]") {
  const std::string name = GENERATE(std::string("pull"), std::string("gta"));
  rt::WorkerPool pool(2);
  auto policy = ata::make_policy(name, 2);
  rt::BatchScheduler scheduler(pool, *policy, ata::testing::without_backups());
  EventLog log;
  scheduler.set_observer(&log);
  const auto result =
      scheduler.run(16, [](const rt::TaskContext&) { std::this_thread::sleep_for(50us); });
  REQUIRE(log.reports.size() == 1);
  CHECK(log.reports[0].tasks.size() == result.report.tasks.size());
  check_spans(log.reports[0], 2);
}

TEST_CASE("a failed batch ends as failed, with no report and nothing learned",
          "[runtime][observer]") {
  Watched watched;
  rt::BatchScheduler& scheduler = watched.scheduler;
  EventLog& log = watched.log;
  CHECK_THROWS_AS(scheduler.run(4,
                                [](const rt::TaskContext& ctx) {
                                  if (ctx.task() == 3) throw std::runtime_error("task 3");
                                }),
                  std::runtime_error);
  CHECK(log.events == std::vector<std::string>{"start 1 B=4 allocated", "end 1 failed"});
  CHECK(log.reports.empty());
}

TEST_CASE("a batch past its deadline ends as timed_out", "[runtime][observer]") {
  rt::WorkerPool pool(1);
  ata::UniformPolicy policy(1);
  rt::BatchScheduler scheduler(pool, policy, ata::testing::without_backups());
  EventLog log;
  scheduler.set_observer(&log);
  CHECK_THROWS_AS(scheduler.run(
                      1,
                      [](const rt::TaskContext& ctx) {
                        while (!ctx.stop_requested()) std::this_thread::sleep_for(1ms);
                      },
                      rt::BatchOptions{.deadline = 20ms}),
                  rt::DeadlineError);
  CHECK(log.events == std::vector<std::string>{"start 1 B=1 allocated", "end 1 timed_out"});
}

TEST_CASE("without an observer, or once it is unset, nothing is told", "[runtime][observer]") {
  rt::WorkerPool pool(2);
  ata::UniformPolicy policy(2);
  rt::BatchScheduler scheduler(pool, policy, ata::testing::without_backups());
  EventLog log;
  CHECK(scheduler.observer() == nullptr);
  scheduler.set_observer(&log);
  scheduler.run(2, [](const rt::TaskContext&) {});
  scheduler.set_observer(nullptr);
  scheduler.run(2, [](const rt::TaskContext&) {});
  CHECK(log.events.size() == 3);
}

TEST_CASE("chunk timing lays a chunk's tasks back to back at the chunk's mean",
          "[runtime][observer]") {
  rt::WorkerPool pool(2);
  ata::UniformPolicy policy(2);
  // Without backups: a tracked batch times each copy, so its chunks are single tasks.
  rt::BatchScheduler scheduler(
      pool, policy, ata::testing::without_backups().set_time_chunks(true));
  const auto report =
      scheduler.run(6, [](const rt::TaskContext&) { std::this_thread::sleep_for(100us); }).report;
  REQUIRE(report.tasks.size() == 6);
  check_spans(report, 2);
  for (std::size_t j = 1; j < 3; ++j) {  // worker 0's share: tasks 0, 1, 2
    CHECK(report.tasks[j].start == report.tasks[j - 1].start + report.tasks[j - 1].duration);
  }
}

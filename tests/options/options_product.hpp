#pragma once
// [runtime][options] Every combination of the scheduler's options on every kind of lanes
// (issue 20: options a user cannot get wrong), enumerated as the cartesian product of
//   binding (on arrival, late) x backups (off, copies, on) x retries (0, 1) x time_chunks x
//   task_records x policy (uta, ata-e: quotas; pull: an indexed race; gta, race:2: fungible
//   races; quota+race: a quota on lane 2 and a fungible race of lanes 0 and 1) x the lane
//   kinds of the including file.
// A combination either cannot be written (late binding has no backups, retries or chunk
// timing: LateBindingOptions has no setter for them, checked by the static_asserts below, so
// it is absent, and counted), or it runs a few small batches and a failing one on the kind's
// lanes, and every batch is checked: B accepted results, each index once, the report
// consistent with itself and with what the options promise, the policy's rounds advanced, and
// a failing task retried or failing the batch as documented (docs/runtime.md, "Options: every
// combination").
//
// A test file defines ATA_OPTIONS_TAG (its kinds' tags), ATA_OPTIONS_PREFIX (the start of its
// test name, unique among the test programs) and LaneKinds (a std::tuple of kinds, see
// lanes/lane_kinds.hpp) before including this header.

#include <algorithm>
#include <atomic>
#include <catch2/catch_template_test_macros.hpp>
#include <catch2/catch_test_macros.hpp>
#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "ata/ata.hpp"
#include "lanes/lane_kinds.hpp"

namespace ata::testing::options {

namespace rt = ata::runtime;

// The settings late binding does not run cannot be written with it: no setter.
template <class Options>
concept SetsBackups = requires(Options o) {
  o.set_backups(BackupOptions{});
};
template <class Options>
concept SetsRetries = requires(Options o) {
  o.set_retries(std::size_t{1});
};
template <class Options>
concept SetsTimeChunks = requires(Options o) {
  o.set_time_chunks(true);
};
template <class Options>
concept SetsLoadAware = requires(Options o) {
  o.set_load_aware(true);
};
static_assert(SetsBackups<rt::SchedulerOptions> && !SetsBackups<rt::LateBindingOptions>);
static_assert(SetsRetries<rt::SchedulerOptions> && !SetsRetries<rt::LateBindingOptions>);
static_assert(SetsTimeChunks<rt::SchedulerOptions> && !SetsTimeChunks<rt::LateBindingOptions>);
static_assert(SetsLoadAware<rt::SchedulerOptions> && !SetsLoadAware<rt::LateBindingOptions>);

inline constexpr std::size_t kLanes = 3;
// race:2 races the two workers of smallest true mean: lanes 0 and 1.
inline const std::vector<double> kMeans{1.0, 2.0, 3.0};
inline constexpr std::size_t kRaceMembers = 2;
// A plan of no named policy: lane 2's quota of one sample, lanes 0 and 1 racing after it (a
// quota of one fits every B).
inline constexpr const char* kQuotaAndRace = "quota+race";

struct Combination {
  bool late = false;
  BackupMode backups = BackupMode::off;
  std::size_t retries = 0;
  bool time_chunks = false;
  bool task_records = true;
  std::string policy;

  // What the options types can write: late binding sets none of the three.
  [[nodiscard]] bool representable() const {
    return !late || (backups == BackupMode::off && retries == 0 && !time_chunks);
  }
  [[nodiscard]] bool fungible() const {
    return policy == "gta" || policy == "race:2" || policy == kQuotaAndRace;
  }
  // A fungible race's first number: the race numbers its samples after the quotas.
  [[nodiscard]] std::size_t first_race_number() const { return policy == kQuotaAndRace ? 1 : 0; }
  // The shape the reports name: late binding hands out quotas one by one, as a pull batch.
  [[nodiscard]] Dispatch dispatch() const {
    if (policy == kQuotaAndRace) return Dispatch::mixed;
    if (fungible()) return Dispatch::greedy;
    if (policy == "pull" || late) return Dispatch::pull;
    return Dispatch::allocated;
  }
};

// How often each task index was called. A fungible race numbers its tasks from a counter, so
// indices pass B; the room is generous, and an index beyond it is itself a finding.
class Calls {
 public:
  explicit Calls(std::size_t batch) : count_(4 * batch + 4 * kLanes) {}
  void note(std::size_t task) {
    if (task < count_.size()) {
      count_[task].fetch_add(1, std::memory_order_relaxed);
    } else {
      beyond_.store(true, std::memory_order_relaxed);
    }
  }
  [[nodiscard]] int of(std::size_t task) const {
    return count_[task].load(std::memory_order_relaxed);
  }
  [[nodiscard]] bool beyond() const { return beyond_.load(std::memory_order_relaxed); }

 private:
  std::vector<std::atomic<int>> count_;
  std::atomic<bool> beyond_{false};
};

// The first thing wrong with a batch of `batch` tasks that returned their index, or "".
inline std::string problem(const Combination& c, const rt::BatchResult<std::size_t>& result,
                           std::size_t batch, const Calls& calls, std::size_t failed_attempts) {
  const auto& report = result.report;
  if (calls.beyond()) return "a task index far beyond B";
  if (result.values.size() != batch) return std::to_string(result.values.size()) + " values";
  if (report.dispatch != c.dispatch()) {
    return "dispatch " + std::string(dispatch_name(report.dispatch));
  }
  if (report.allocation.size() != kLanes || report.busy.size() != kLanes) return "not n lanes";
  if (report.allocation.total() != batch) return "allocation does not sum to B";
  if (report.retries != failed_attempts) {
    return std::to_string(report.retries) + " retries for " + std::to_string(failed_attempts);
  }
  if (c.policy == "race:2" && report.allocation[kRaceMembers] != 0) return "an idle lane ran";
  // Each index's result, from one of its copies: at most the rule's max_copies (2) unless a
  // failed attempt ran it once more; exactly once without backups.
  const int most = (c.backups == BackupMode::off ? 1 : 2) + static_cast<int>(failed_attempts);
  std::set<std::size_t> distinct;
  for (std::size_t j = 0; j < batch; ++j) {
    const std::size_t value = result.values[j];
    if (!c.fungible() && value != j)
      return "value " + std::to_string(value) + " at " + std::to_string(j);
    if (!distinct.insert(value).second) return "a result given twice: " + std::to_string(value);
    if (calls.of(value) < 1 || calls.of(value) > most) {
      return std::to_string(calls.of(value)) + " calls of task " + std::to_string(value);
    }
  }
  // Records present iff promised, and then consistent with the allocation and busy times.
  if (!c.task_records) {
    if (!report.tasks.empty()) return "records kept with task_records(false)";
    return report.discarded() == 0 ? "" : "discarded copies without records";
  }
  std::vector<std::size_t> accepted(kLanes, 0);
  std::vector<std::chrono::nanoseconds> busy(kLanes, std::chrono::nanoseconds{0});
  for (std::size_t k = 0; k < report.tasks.size(); ++k) {
    const rt::TaskRecord& record = report.tasks[k];
    if (record.worker >= kLanes) return "a record of a lane out of range";
    busy[record.worker] += record.duration;
    if (record.accepted) ++accepted[record.worker];
    if (!c.fungible() && k < batch && (record.task != k || !record.accepted)) {
      return "record " + std::to_string(k) + " is not task " + std::to_string(k) + "'s result";
    }
  }
  // In allocated mode report.allocation is the policy's; a take-over, a backup copy or a
  // retry may give a task's result from another lane than planned.
  const bool moved = report.takeovers + report.backup_copies + report.retries > 0;
  for (std::size_t i = 0; i < kLanes; ++i) {
    if (accepted[i] != report.allocation[i] && !(moved && c.dispatch() == Dispatch::allocated)) {
      return "lane " + std::to_string(i) + ": records";
    }
    // Chunk timing records each task with its chunk's mean, rounded down.
    if (busy[i] > report.busy[i]) return "lane " + std::to_string(i) + ": records past busy";
  }
  if (failed_attempts > 0 && report.discarded() < failed_attempts) return "no failed attempt";
  return "";
}

inline std::unique_ptr<rt::BatchScheduler> scheduler_for(const Combination& c, rt::Lanes& lanes,
                                                         Policy& policy) {
  if (c.late) {
    return std::make_unique<rt::BatchScheduler>(
        lanes, policy, rt::LateBindingOptions{}.set_task_records(c.task_records));
  }
  return std::make_unique<rt::BatchScheduler>(lanes, policy,
                                              rt::SchedulerOptions{}
                                                  .set_backups(BackupOptions{}.set_mode(c.backups))
                                                  .set_retries(c.retries)
                                                  .set_time_chunks(c.time_chunks)
                                                  .set_task_records(c.task_records));
}

// A few small batches and a failing one, checked, under combination `c` on `lanes`.
inline void run_combination(const Combination& c, rt::Lanes& lanes) {
  PolicyOptions policy_options;
  policy_options.means = kMeans;
  const std::vector<std::size_t> racers{0, 1};
  auto policy = c.policy == kQuotaAndRace
                    ? std::make_unique<FixedPlanPolicy>(
                          c.policy, Plan::race(kLanes, racers, RaceKind::fungible).set_quota(2, 1))
                    : make_policy(c.policy, kLanes, policy_options);
  const auto scheduler = scheduler_for(c, lanes, *policy);

  std::size_t rounds = 0;
  for (const std::size_t batch : {1, 7, 16}) {
    Calls calls(batch);
    const auto result = scheduler->run(batch, [&](const rt::TaskContext& ctx) {
      calls.note(ctx.task());
      return ctx.task();
    });
    ++rounds;
    CHECK(problem(c, result, batch, calls, 0) == "");
    CHECK(policy->round() == rounds);
    CHECK(scheduler->rounds() == rounds);
  }
  // One failing attempt: task 3's first one. In a fungible race it is the race's first task
  // (numbered after the quotas), whose result any later task replaces; the other racers wait
  // until the lane
  // that failed it comes back for another task (the failure handled) or the batch stops, so
  // that the failure is never surplus. With a retry the batch succeeds and reports it;
  // without, the batch fails with the task's exception, its round still counted (unless a
  // backup copy of the task gave the result, below).
  constexpr std::size_t kBatch = 7;
  const std::size_t failing = c.fungible() ? c.first_race_number() : 3;
  Calls calls(kBatch);
  std::atomic<bool> failed{false};
  std::atomic<std::size_t> failed_on{kLanes};
  std::atomic<bool> handled{false};
  const auto flaky = [&](const rt::TaskContext& ctx) {
    calls.note(ctx.task());
    if (ctx.task() == failing && !failed.exchange(true)) {
      failed_on = ctx.worker();
      throw std::runtime_error("planned");
    }
    if (c.fungible()) {
      if (ctx.worker() == failed_on.load()) handled = true;
      const auto patience = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (!handled.load() && !ctx.stop_requested() &&
             std::chrono::steady_clock::now() < patience) {
        std::this_thread::yield();
      }
    }
    return ctx.task();
  };
  ++rounds;
  std::optional<rt::BatchResult<std::size_t>> result;
  try {
    result.emplace(scheduler->run(kBatch, flaky));
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()) == "planned");
  }
  // With backups, a copy of the task still running when its attempt fails gives the result
  // (SchedulerOptions::set_backups): no failure for the batch, no retry.
  const bool absorbed = result && result->report.retries == 0 && c.backups != BackupMode::off &&
                        calls.of(failing) >= 2;
  if (c.retries == 0) {
    CHECK((!result || absorbed));
  } else {
    CHECK((result && (result->report.retries == 1 || absorbed)));
  }
  if (result) CHECK(problem(c, *result, kBatch, calls, absorbed ? 0 : 1) == "");
  CHECK(policy->round() == rounds);
  CHECK(scheduler->rounds() == rounds);
  // Usable after either outcome.
  Calls after(kBatch);
  const auto next = scheduler->run(kBatch, [&](const rt::TaskContext& ctx) {
    after.note(ctx.task());
    return ctx.task();
  });
  CHECK(problem(c, next, kBatch, after, 0) == "");
}

TEMPLATE_LIST_TEST_CASE(ATA_OPTIONS_PREFIX
                        "every combination of options works or cannot be written",
                        "[runtime][options]" ATA_OPTIONS_TAG, LaneKinds) {
  // One set of lanes for the whole product, as a program would keep one: schedulers come and
  // go on it.
  TestType kind;
  auto lanes = kind.make(rt::LaneOptions(kLanes));
  std::size_t ran = 0;
  std::size_t absent = 0;
  for (const bool late : {false, true}) {
    for (const BackupMode backups : {BackupMode::off, BackupMode::copies, BackupMode::on}) {
      for (const std::size_t retries : {0, 1}) {
        for (const bool time_chunks : {false, true}) {
          for (const bool task_records : {true, false}) {
            for (const char* policy : {"uta", "ata-e", "pull", "gta", "race:2", kQuotaAndRace}) {
              const Combination c{late, backups, retries, time_chunks, task_records, policy};
              CAPTURE(TestType::name, c.late, backup_mode_name(c.backups), c.retries, c.time_chunks,
                      c.task_records, c.policy);
              // Not representable: LateBindingOptions has no setter for it (static_asserts).
              if (!c.representable()) {
                ++absent;
                continue;
              }
              // Not representable either: late binding queues each task on a lane's thread,
              // which a caller lane lacks, so BatchScheduler(CallerLanePool&, ...,
              // LateBindingOptions) is deleted (static_asserts in caller_lane_test.cpp).
              if (c.late && lanes->has_caller_lane()) {
                ++absent;
                continue;
              }
              run_combination(c, *lanes);
              ++ran;
            }
          }
        }
      }
    }
  }
  // 2 x 3 x 2 x 2 x 2 x 6: late binding runs only backups off, no retries, tasks timed, and
  // none of it on a caller lane.
  const std::size_t late_on_caller = lanes->has_caller_lane() ? 12 : 0;
  CHECK(ran == 156 - late_on_caller);
  CHECK(absent == 132 + late_on_caller);
}

}  // namespace ata::testing::options

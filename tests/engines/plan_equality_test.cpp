// [engines] One interpretation of a plan (issue 20): the plans of plan_table.hpp through the
// simulator and through the thread runtime on every kind of lanes that needs no oneTBB
// (WorkerPool, PostedLanes over std::threads, the three AsioLanes kinds); everything here also
// runs under ThreadSanitizer. The oneTBB kinds are in plan_equality_tbb_test.cpp. Also: the
// simulator's own copy log is consistent for every plan of the table.
#include <tuple>

#include "lanes/asio_lane_kinds.hpp"
#include "lanes/lane_kinds.hpp"

using LaneKinds = std::tuple<ata::testing::OwnThreads, ata::testing::PostedOnThreadQueue,
                             ata::testing::AsioContextPerLane, ata::testing::AsioSharedPool,
                             ata::testing::AsioStrands>;
#define ATA_ENGINES_TAG "[threads]"
#define ATA_ENGINES_PREFIX "engines: "
#include "engines/plan_equality.hpp"

namespace ata::testing::engines {

namespace {

using Outcome = sim::CopyRecord::Outcome;

// The copies worker by worker, each worker's in start order.
std::vector<sim::CopyRecord> per_worker_in_start_order(std::vector<sim::CopyRecord> copies) {
  std::stable_sort(copies.begin(), copies.end(), [](const auto& a, const auto& b) {
    return a.worker != b.worker ? a.worker < b.worker : a.start < b.start;
  });
  return copies;
}

// The first inconsistency of the simulator's copy log for `c`, or "".
std::string log_problem(const PlanCase& c, const Expected& e) {
  const std::size_t n = c.plan.workers();
  const auto times = task_times(n);
  const auto at = [](const sim::CopyRecord& copy) {
    return " at " + to_string(Key{copy.worker, copy.task});
  };
  if (e.results.size() != c.batch) return "not B results";
  std::vector<std::vector<sim::CopyRecord>> per_worker(n);
  for (const auto& copy : e.copies) {
    if (copy.worker >= n) return "a copy of a worker out of range";
    const bool used = c.plan.is_racer(copy.worker) || c.plan.quotas()[copy.worker] > 0;
    if (!used) return "a copy on a worker the plan leaves idle" + at(copy);
    if (copy.outcome == Outcome::restarted) return "a restart without a budget" + at(copy);
    const double ran = copy.end - copy.start;
    if (copy.outcome == Outcome::accepted && ran != times[copy.worker]) {
      return "an accepted copy not of its worker's time" + at(copy);
    }
    // At most its time: a copy due at the instant of the B-th result, but after it in event
    // order (a higher worker index), is stopped too.
    if (copy.outcome == Outcome::stopped && !(ran > 0.0 && ran <= times[copy.worker])) {
      return "a stopped copy not cut short" + at(copy);
    }
    per_worker[copy.worker].push_back(copy);
  }
  // Each worker runs its copies back to back from t = 0, and is never idle while it has work.
  for (auto& copies : per_worker) {
    std::sort(copies.begin(), copies.end(),
              [](const auto& a, const auto& b) { return a.start < b.start; });
    for (std::size_t k = 0; k < copies.size(); ++k) {
      const double from = k == 0 ? 0.0 : copies[k - 1].end;
      if (copies[k].start != from) return "a worker idle between copies" + at(copies[k]);
    }
  }
  if (e.order.size() != c.batch) return std::to_string(e.order.size()) + " accepted for B";
  if (fungible(c.plan)) {
    // B accepted, the results in their finish order; what still ran at the B-th was stopped
    // then; each quota worker's samples numbered from the start of its range in worker order,
    // without gaps (it may not reach the end of it), and the race's after the quotas, without
    // gaps or repeats.
    const std::size_t quota_total = c.plan.quotas().total();
    std::vector<std::size_t> numbers;
    for (std::size_t m = 0; m < c.batch; ++m) {
      if (e.results[m].worker != e.order[m].worker || e.results[m].finish != e.order[m].end) {
        return "result " + std::to_string(m) + " is not the m-th accepted copy";
      }
    }
    std::vector<std::size_t> quota_next(n, 0);  // per worker: its next quota number
    for (std::size_t w = 0, first = 0; w < n; ++w) {
      quota_next[w] = first;
      first += c.plan.quotas()[w];
    }
    for (const auto& copy : per_worker_in_start_order(e.copies)) {
      if (copy.task < quota_total) {
        if (copy.task != quota_next[copy.worker]++) return "a quota sample out of turn" + at(copy);
      } else {
        numbers.push_back(copy.task);
      }
      if (copy.outcome == Outcome::stopped && copy.end != e.order.back().end) {
        return "a copy stopped before or after the B-th result" + at(copy);
      }
    }
    std::sort(numbers.begin(), numbers.end());
    for (std::size_t k = 0; k < numbers.size(); ++k) {
      if (numbers[k] != quota_total + k) return "race samples not numbered after the quotas";
    }
    // Every racer still running at the end was stopped: each has a copy reaching the end.
    for (std::size_t w : c.plan.racers()) {
      if (per_worker[w].empty() || per_worker[w].back().end != e.order.back().end) {
        return "racer " + std::to_string(w) + " stopped before the round's end";
      }
    }
    return "";
  }
  // Quotas and indexed races: every index accepted exactly once, nothing stopped, and the
  // result of each index is its accepted copy.
  std::vector<std::size_t> accepted(c.batch, 0);
  for (const auto& copy : e.copies) {
    if (copy.outcome != Outcome::accepted) return "a copy stopped without hedging" + at(copy);
    if (copy.task >= c.batch) return "an index out of range" + at(copy);
    if (++accepted[copy.task] != 1) return "an index accepted twice" + at(copy);
    if (e.results[copy.task].worker != copy.worker || e.results[copy.task].finish != copy.end) {
      return "a result that is not its accepted copy" + at(copy);
    }
  }
  // Quota workers own consecutive ranges in worker order; the race's pool is claimed in
  // start order (ties by lower worker index).
  std::size_t next = 0;
  for (std::size_t w = 0; w < n; ++w) {
    for (std::size_t k = 0; k < c.plan.quotas()[w]; ++k, ++next) {
      if (e.results[next].worker != w) return "index " + std::to_string(next) + " off its quota";
    }
  }
  std::vector<sim::CopyRecord> claims;
  for (const auto& copy : e.copies) {
    if (c.plan.is_racer(copy.worker)) claims.push_back(copy);
  }
  std::stable_sort(claims.begin(), claims.end(), [](const auto& a, const auto& b) {
    return a.start != b.start ? a.start < b.start : a.worker < b.worker;
  });
  for (const auto& claim : claims) {
    if (claim.task != next++) return "the pool not claimed in start order" + at(claim);
  }
  return "";
}

}  // namespace

TEST_CASE("engines: the simulator's copy log of every plan of the table is consistent",
          "[engines][plan][sim]") {
  for (const PlanCase& c : plan_cases()) {
    CAPTURE(c.name, c.batch);
    CHECK(log_problem(c, simulate(c)) == "");
  }
  // The tie the header comment describes: in "fungible {0,1} of 3" with B = 5 (times 2 and 3),
  // worker 0's third result and worker 1's second both land at t = 6, worker 0's first; worker
  // 0 then starts a sample the simulator stops at once and leaves out of its log.
  const auto cases = plan_cases();
  const auto tie = std::find_if(cases.begin(), cases.end(),
                                [](const PlanCase& c) { return c.name == "fungible {0,1} of 3"; });
  REQUIRE(tie != cases.end());
  const Expected e = simulate(*tie);
  CHECK(e.order.back().worker == 1);
  CHECK(e.order.back().end == 6.0);
  REQUIRE(e.unlogged.size() == 1);
  CHECK(e.unlogged[0] == Key{0, 5});
  // Quotas with a fungible race, "quotas {0,0,0,3}, fungible {0,1}", B = 5 (times 2, 3 and 7):
  // the racers number from 3 and give every result, the same tie at t = 6 starts worker 0's
  // sample 8, and worker 3 is stopped in its first quota sample and never starts 1 or 2.
  const auto mixed = std::find_if(cases.begin(), cases.end(), [](const PlanCase& c) {
    return c.name == "quotas {0,0,0,3}, fungible {0,1}";
  });
  REQUIRE(mixed != cases.end());
  const Expected m = simulate(*mixed);
  REQUIRE(m.unlogged.size() == 1);
  CHECK(m.unlogged[0] == Key{0, 8});
  CHECK(m.starts[3] == std::vector<std::size_t>{0});
  CHECK(m.starts[1] == std::vector<std::size_t>{4, 6});
}

}  // namespace ata::testing::engines

#pragma once
// The plans every engine is compared on (issue 20, "one interpretation of a plan"), and what
// the virtual-time simulator does with each: the outcome the thread runtime
// (plan_equality.hpp) and the MPI back-end (tests/mpi/plan_equality_mpi_test.cpp) must
// reproduce. Nothing here depends on an engine other than the simulator.

#include <algorithm>
#include <compare>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "ata/core/fixed_plan_policy.hpp"
#include "ata/core/plan.hpp"
#include "ata/models/scenario.hpp"
#include "ata/models/time_model.hpp"
#include "ata/sim/simulation.hpp"

namespace ata::testing::engines {

// One plan of the table, for a batch of `batch` tasks.
struct PlanCase {
  std::string name;
  Plan plan;
  std::size_t batch = 0;
};

// Worker i's constant task time in the simulator: distinct integers, so that sums are exact
// and ties between workers (2 + 2 + 2 = 3 + 3) happen at exactly equal times.
inline std::vector<double> task_times(std::size_t workers) {
  const std::vector<double> times{2.0, 3.0, 5.0, 7.0};
  return {times.begin(), times.begin() + static_cast<std::ptrdiff_t>(workers)};
}

inline std::vector<PlanCase> plan_cases() {
  using Q = std::vector<std::size_t>;
  const auto quotas = [](Q q) { return Plan::quotas(Allocation(std::move(q))); };
  const auto race = [](std::size_t n, Q members, RaceKind kind) {
    return Plan::race(n, members, kind);
  };
  // Quotas, and racers: for the indices the quotas leave (indexed), or for any results until
  // B are in (fungible; each quota is then at most that many samples).
  const auto mixed = [](Q q, Q members, RaceKind kind = RaceKind::indexed) {
    Plan plan = Plan::quotas(Allocation(std::move(q)));
    for (std::size_t w : members) plan.set_racer(w);
    return plan.set_race_kind(kind);
  };
  const auto indexed = RaceKind::indexed;
  const auto fungible = RaceKind::fungible;
  std::vector<PlanCase> cases{
      {"quotas {3,0,2}", quotas({3, 0, 2}), 5},
      {"quotas {1,2,0,3}", quotas({1, 2, 0, 3}), 6},
      {"quotas {0,0,1}", quotas({0, 0, 1}), 1},
      {"indexed {0,2} of 3", race(3, {0, 2}, indexed), 5},
      {"indexed {1,2,3} of 4", race(4, {1, 2, 3}, indexed), 7},
      {"fungible {1,2} of 3", race(3, {1, 2}, fungible), 4},
      {"fungible {0,1} of 3", race(3, {0, 1}, fungible), 5},  // a tie at the B-th result
      {"fungible {0,2,3} of 4", race(4, {0, 2, 3}, fungible), 7},
      {"quotas {2,0,0}, indexed {1,2}", mixed({2, 0, 0}, {1, 2}), 7},
      {"quotas {0,1,0,2}, indexed {0,2}", mixed({0, 1, 0, 2}, {0, 2}), 6},
      // Worker 0's quota ends at t = 4; the racers give the rest.
      {"quotas {2,0,0}, fungible {1,2}", mixed({2, 0, 0}, {1, 2}, fungible), 7},
      // Worker 3 is stopped in its quota's first sample and never starts the other two; the
      // B-th result (worker 1's, t = 6) ties with worker 0's, which starts a sample then.
      {"quotas {0,0,0,3}, fungible {0,1}", mixed({0, 0, 0, 3}, {0, 1}, fungible), 5},
      // Worker 0 both holds a quota and races after it; worker 1's quota is cut short.
      {"quotas {1,2,0}, fungible {0,2}", mixed({1, 2, 0}, {0, 2}, fungible), 4},
  };
  for (std::size_t b : {1, 2, 4, 7}) {
    cases.push_back({"indexed, all 3", Plan::race(3, indexed), b});
    cases.push_back({"fungible, all 3", Plan::race(3, fungible), b});
  }
  for (std::size_t b : {3, 6}) {
    cases.push_back({"indexed, all 4", Plan::race(4, indexed), b});
    cases.push_back({"fungible, all 4", Plan::race(4, fungible), b});
  }
  return cases;
}

inline bool fungible(const Plan& plan) {
  return !plan.racers().empty() && plan.race_kind() == RaceKind::fungible;
}

struct Key {
  std::size_t worker = 0;
  std::size_t task = 0;
  friend auto operator<=>(const Key&, const Key&) = default;
};

inline std::string to_string(const Key& key) {
  return "(worker " + std::to_string(key.worker) + ", task " + std::to_string(key.task) + ")";
}

// What the simulator did with one plan, and what the threads are therefore expected to do.
struct Expected {
  std::vector<sim::CopyRecord> copies;   // the simulator's copy log
  std::vector<sim::TaskResult> results;  // last_results()
  // The accepted copies in the simulator's event order: end time, ties by lower worker.
  std::vector<sim::CopyRecord> order;
  // Fungible race: samples started at the instant of the B-th result by workers whose result
  // came just before it in event order (a lower worker index): their quota's next, or else
  // the race's next number. The simulator stops them at once and, as they ran for no time,
  // leaves them out of its copy log; a real engine starts them and stops them at the B-th
  // result.
  std::vector<Key> unlogged;
  // Per worker: the tasks it starts, in order (the copy log's, then the unlogged ones).
  std::vector<std::vector<std::size_t>> starts;
};

inline Expected simulate(const PlanCase& c) {
  const std::size_t n = c.plan.workers();
  std::vector<models::TimeModel> models;
  for (double t : task_times(n)) models.push_back(models::TimeModel::constant(t));
  FixedPlanPolicy policy(c.name, c.plan);
  sim::Simulation simulation(models::Scenario("engines", std::move(models)), policy, c.batch,
                             /*seed=*/1);
  simulation.set_copy_records(true);
  (void)simulation.run_round();
  Expected e;
  e.copies = simulation.last_copies();
  e.results = simulation.last_results();
  for (const auto& copy : e.copies) {
    if (copy.outcome == sim::CopyRecord::Outcome::accepted) e.order.push_back(copy);
  }
  std::stable_sort(e.order.begin(), e.order.end(), [](const auto& a, const auto& b) {
    return a.end != b.end ? a.end < b.end : a.worker < b.worker;
  });
  if (fungible(c.plan) && !e.order.empty()) {
    // The simulator numbers quota samples 0..(sum of quotas) by worker, and the race's after
    // them in start order; the unlogged ones started last.
    const auto quotas = c.plan.quotas().tasks();
    std::vector<std::size_t> quota_started(n, 0);
    std::size_t numbered = c.plan.quotas().total();
    for (const auto& copy : e.copies) {
      if (copy.task < c.plan.quotas().total()) {
        ++quota_started[copy.worker];
      } else {
        numbered = std::max(numbered, copy.task + 1);
      }
    }
    const double last = e.order.back().end;
    for (std::size_t m = 0; m + 1 < e.order.size(); ++m) {
      const std::size_t w = e.order[m].worker;
      if (e.order[m].end != last) continue;
      if (quota_started[w] < quotas[w]) {
        std::size_t first = 0;
        for (std::size_t u = 0; u < w; ++u) first += quotas[u];
        e.unlogged.push_back({w, first + quota_started[w]++});
      } else if (c.plan.is_racer(w)) {
        e.unlogged.push_back({w, numbered++});
      }
    }
  }
  e.starts.assign(n, {});
  std::vector<sim::CopyRecord> by_start = e.copies;
  std::stable_sort(by_start.begin(), by_start.end(),
                   [](const auto& a, const auto& b) { return a.start < b.start; });
  for (const auto& copy : by_start) e.starts[copy.worker].push_back(copy.task);
  for (const Key& key : e.unlogged) e.starts[key.worker].push_back(key.task);
  return e;
}

}  // namespace ata::testing::engines

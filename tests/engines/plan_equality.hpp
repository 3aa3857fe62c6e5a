#pragma once
// One interpretation of a plan (issue 20): the same plan run by the virtual-time simulator and
// by the thread runtime gives the same outcome: who ran which task, which results count, and
// which copies were stopped. The plans and the simulator's outcome of each are in
// plan_table.hpp, which the MPI back-end's test (tests/mpi/plan_equality_mpi_test.cpp) shares.
//
// How the threads are made deterministic. Every task blocks on a gate of its own, keyed by
// (worker, ctx.task()), after noting that it started; the test thread opens the gates in the
// simulator's event order (copies by end time, ties by lower worker index, as the simulator
// orders its events), one at a time: it opens a copy's gate, waits until the copy has
// returned, then waits until its worker has started the next copy the simulator has it start
// at that instant (a quota worker's next task, a racer's next claim), and only then opens the
// next gate. So every claim of a racer happens alone, in the simulator's order. No sleep, no
// wall-clock race: every wait is bounded (kPatience) and fails naming what never happened.
//
// The one moment this cannot order by itself is t = 0: several racers of a race claim their
// first index at once, and which one gets index 0 depends on which thread runs first. The
// test therefore admits the starts too: it first runs a holder batch (one task per worker,
// each blocked on a holder gate) on the same lanes, queues the plan's batch behind it (every
// lane runs its chunks FIFO), and releases the holders one by one in worker order, each time
// waiting until that worker has started its first copy of the plan's batch before releasing
// the next. The first claims then happen in worker order, as in the simulator, and the whole
// run, numbering included, is fixed by the plan: the comparison is exact, not up to a
// permutation. The holders are released only once the batch's chunks are queued on every lane
// it uses (Lanes::queued_chunks(), polled with a bound), so that each lane goes from its holder
// straight to its chunk: on oneTBB arenas, a chunk posted to an arena whose thread had already
// left sometimes waited past the test's patience for a thread (a worker unused by the plan
// released first made it likely).
//
// A returned copy is not yet a counted result: the runtime counts it after the task returns.
// Where the worker starts a next copy, that start shows the count happened. A quota worker's
// last result in a fungible race shows nothing, and a later result counted before it would
// change which is the B-th (seen under load: a racer then started one sample more). So a
// trailer batch (one gated task per worker) is queued behind the plan's, with the holders still
// in place: a lane starts its trailer only once its share of the plan's batch is over, after
// its last count, and the test waits for that start before it opens the next gate.
//
// What is compared:
// - every copy each worker started, in order: (worker, task) as the simulator's copy log has
//   them. For a fungible race the thread runtime numbers tasks from a counter in start order
//   (ctx.task()), the simulator numbers its samples the same way (from the sum of quotas, 0
//   here), so with the starts ordered the numbers agree too;
// - which copies were accepted and which stopped (report.tasks against the copy log), and
//   that every stopped copy returned because its stop was requested, never because its gate
//   opened;
// - the results: for quotas and indexed races, the worker of each index's result (values[j]
//   against last_results()[j]); for a fungible race, which (worker, sample) gave each of the
//   B values. The two engines order a fungible race's results differently, each as it
//   documents: the simulator's last_results() in finish order, the runtime's values by task
//   number (it fills result slots in finish order, then returns them in start order), so
//   values[m] is compared with the accepted copy of the m-th smallest sample number;
// - report.allocation against the results each worker gave in the simulator, and the dispatch.
//
// One difference of bookkeeping, not of behaviour, is expected: in a fungible race a racer
// whose result lands at the same instant as the B-th, but before it in event order (a lower
// worker index), starts its next sample at that instant in both engines; the simulator stops
// it at once and, having run for no time, leaves it out of its copy log. On threads that
// sample starts for real and is stopped when the B-th result arrives, so it appears in
// report.tasks as a discarded copy. The test derives those copies from the simulator's log
// (`unlogged` below) and expects them on threads; the case "fungible {0,1} of 3, B = 5" has
// one. (The racer giving the B-th result itself starts nothing on threads, and its sample in
// the simulator is likewise unlogged.)
//
// A file defines ATA_ENGINES_TAG, ATA_ENGINES_PREFIX and LaneKinds (a std::tuple of lane kinds,
// tests/lanes/lane_kinds.hpp) before including this header, as for lane_scenarios.hpp.

#include <algorithm>
#include <catch2/catch_template_test_macros.hpp>
#include <catch2/catch_test_macros.hpp>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ata/ata.hpp"
#include "engines/plan_table.hpp"
#include "lanes/lane_kinds.hpp"
#include "support/eventually.hpp"
#include "support/without_backups.hpp"

namespace ata::testing::engines {

namespace rt = ata::runtime;
using namespace std::chrono_literals;

// How long the test waits for any one step of the threads before failing.
inline constexpr std::chrono::seconds kPatience{20};

// Gates keyed by (worker, task): a task notes its start and blocks until the test opens its
// gate or its stop is requested; the test waits, bounded, for starts and returns.
class Gates {
 public:
  explicit Gates(std::size_t workers) : started_(workers) {}

  // On a worker: returns whether the task left because its stop was requested.
  bool pass(const rt::TaskContext& ctx) {
    const Key key{ctx.worker(), ctx.task()};
    std::unique_lock lock(mutex_);
    if (key.worker < started_.size()) started_[key.worker].push_back(key.task);
    changed_.notify_all();
    changed_.wait(lock, ctx.stop_token(), [&] { return all_open_ || open_.contains(key); });
    const bool stopped = !(all_open_ || open_.contains(key));
    returned_.emplace(key, stopped);
    changed_.notify_all();
    return stopped;
  }

  // The test's side.
  void open(const Key& key) {
    {
      std::lock_guard lock(mutex_);
      open_.insert(key);
    }
    changed_.notify_all();
  }
  void open_all() {
    {
      std::lock_guard lock(mutex_);
      all_open_ = true;
    }
    changed_.notify_all();
  }
  // Whether `worker` started `count` tasks within kPatience.
  bool await_starts(std::size_t worker, std::size_t count) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, kPatience, [&] { return started_[worker].size() >= count; });
  }
  bool await_return(const Key& key) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, kPatience, [&] { return returned_.contains(key); });
  }
  // The `k`-th task `worker` started (it has started more than k).
  std::size_t started_task(std::size_t worker, std::size_t k) {
    std::lock_guard lock(mutex_);
    return started_[worker].at(k);
  }
  std::vector<std::vector<std::size_t>> started() {
    std::lock_guard lock(mutex_);
    return started_;
  }
  // Per copy that returned: whether it left on its stop request.
  std::map<Key, bool> returned() {
    std::lock_guard lock(mutex_);
    return returned_;
  }
  // What the threads did so far, for failure messages.
  std::string describe() {
    std::lock_guard lock(mutex_);
    // Appended piece by piece: g++ 12 warns (-Wrestrict) on literal + temporary string here.
    std::string s = "started:";
    for (std::size_t w = 0; w < started_.size(); ++w) {
      s.append(" worker ").append(std::to_string(w)).append(" [");
      for (std::size_t t : started_[w]) s.append(" ").append(std::to_string(t));
      s.append(" ]");
    }
    s.append("; returned:");
    for (const auto& [key, stopped] : returned_) {
      s.append(" ").append(to_string(key)).append(stopped ? "*" : "");
    }
    return s.append(" (* stopped)");
  }

 private:
  std::mutex mutex_;
  std::condition_variable_any changed_;
  std::vector<std::vector<std::size_t>> started_;  // per worker, in start order
  std::set<Key> open_;
  std::map<Key, bool> returned_;
  bool all_open_ = false;
};

// Plays its plans in turn, round after round: here a holder batch, then the plan under test.
class ScriptedPolicy final : public Policy {
 public:
  explicit ScriptedPolicy(std::vector<Plan> plans)
      : Policy(plans.front().workers()), plans_(std::move(plans)) {}
  [[nodiscard]] std::string_view name() const noexcept override { return "scripted"; }
  [[nodiscard]] bool needs_every_sample() const noexcept override { return false; }

 private:
  void choose_plan(std::size_t /*batch*/, Plan& out) override {
    out = plans_.at((round() - 1) % plans_.size());
  }
  std::vector<Plan> plans_;
};

// What a gated task returns: who ran it, under which number, and whether it was stopped.
struct Ran {
  std::size_t worker = 0;
  std::size_t task = 0;
  bool stopped = false;
};

// The plan of `c` on `lanes`, driven in the simulator's order (see the header comment).
// Returns "" or the first step that did not happen; fills `result` and `gates`' logs.
inline std::string drive(rt::Lanes& lanes, const PlanCase& c, const Expected& e, Gates& gates,
                         rt::BatchResult<Ran>& result) {
  const std::size_t n = c.plan.workers();
  ScriptedPolicy policy({Plan::quotas(Allocation(std::vector<std::size_t>(n, 1))), c.plan});
  // The plan alone, as the simulator runs it: none of the scheduler's default backups.
  rt::BatchScheduler scheduler(lanes, policy, ata::testing::without_backups());
  Gates holders(n);
  Gates trailers(n);
  const auto gated = [&gates](const rt::TaskContext& ctx) {
    const bool stopped = gates.pass(ctx);
    return Ran{ctx.worker(), ctx.task(), stopped};
  };
  std::future<rt::BatchResult<Ran>> holding;
  std::future<rt::BatchResult<Ran>> tested;
  std::future<rt::BatchResult<Ran>> trailing;
  // Whatever happens below, every gate opens before the batches are waited for.
  struct OpenAll {
    Gates& a;
    Gates& b;
    Gates& c;
    ~OpenAll() {
      a.open_all();
      b.open_all();
      c.open_all();
    }
  };
  const auto run_gated_by = [&scheduler, n](Gates& by) {
    return std::async(std::launch::async, [&scheduler, &by, n] {
      return scheduler.run(n, [&by](const rt::TaskContext& ctx) {
        (void)by.pass(ctx);
        return Ran{ctx.worker(), ctx.task(), false};
      });
    });
  };
  std::string problem;
  {
    const OpenAll open_all{holders, gates, trailers};
    holding = run_gated_by(holders);
    for (std::size_t i = 0; i < n && problem.empty(); ++i) {
      if (!holders.await_starts(i, 1)) {
        problem = "the holder of worker " + std::to_string(i) + " never started";
      }
    }
    if (!problem.empty()) return problem;
    tested = std::async(std::launch::async, [&] { return scheduler.run(c.batch, gated); });
    // Its chunks queued behind the holders on every lane it uses, before any holder leaves:
    // each lane then goes from its holder straight to its chunk.
    std::size_t used = 0;
    for (std::size_t i = 0; i < n; ++i) used += c.plan.is_racer(i) || c.plan.quotas()[i] > 0;
    if (!eventually([&] { return lanes.queued_chunks() == used; }, kPatience)) {
      return std::to_string(lanes.queued_chunks()) + " chunks queued for the batch's " +
             std::to_string(used) + " lanes";
    }
    trailing = run_gated_by(trailers);
    if (!eventually([&] { return lanes.queued_chunks() == used + n; }, kPatience)) {
      return std::to_string(lanes.queued_chunks()) + " chunks queued for the batch's " +
             std::to_string(used) + " lanes and the trailer's " + std::to_string(n);
    }
    // t = 0: the first starts, one worker at a time, in worker order.
    std::vector<std::size_t> seen(n, 0);  // starts each worker made so far
    for (std::size_t i = 0; i < n; ++i) {
      holders.open({i, i});
      if (e.starts[i].empty()) continue;
      if (!gates.await_starts(i, 1)) {
        return "worker " + std::to_string(i) + " never started its first copy at t = 0; " +
               gates.describe();
      }
      seen[i] = 1;
      if (gates.started_task(i, 0) != e.starts[i][0]) {
        return "worker " + std::to_string(i) + " started task " +
               std::to_string(gates.started_task(i, 0)) + " first, the simulator task " +
               std::to_string(e.starts[i][0]) + "; " + gates.describe();
      }
    }
    // Then every result in the simulator's event order.
    for (std::size_t m = 0; m < e.order.size(); ++m) {
      const Key key{e.order[m].worker, e.order[m].task};
      gates.open(key);
      if (!gates.await_return(key)) {
        return "copy " + to_string(key) + " never returned once released (result " +
               std::to_string(m) + " in the simulator's order); " + gates.describe();
      }
      if (fungible(c.plan) && m + 1 == c.batch) break;  // the B-th result: the rest is stopped
      const std::size_t w = key.worker;
      if (seen[w] < e.starts[w].size()) {
        if (!gates.await_starts(w, seen[w] + 1)) {
          return "worker " + std::to_string(w) + " never started its copy " +
                 std::to_string(seen[w]) + " (task " + std::to_string(e.starts[w][seen[w]]) +
                 ") after " + to_string(key) + "; " + gates.describe();
        }
        if (gates.started_task(w, seen[w]) != e.starts[w][seen[w]]) {
          return "worker " + std::to_string(w) + " started task " +
                 std::to_string(gates.started_task(w, seen[w])) + " after " + to_string(key) +
                 ", the simulator task " + std::to_string(e.starts[w][seen[w]]) + "; " +
                 gates.describe();
        }
        ++seen[w];
      } else if (fungible(c.plan) && !c.plan.is_racer(w) && !trailers.await_starts(w, 1)) {
        return "worker " + std::to_string(w) + " never left the batch after its last result " +
               to_string(key) + "; " + gates.describe();
      }
    }
    // A fungible race: what still runs must stop on its own, at the stop request.
    for (std::size_t w = 0; w < n; ++w) {
      for (std::size_t t : e.starts[w]) {
        const Key key{w, t};
        const bool accepted = std::any_of(e.order.begin(), e.order.end(), [&](const auto& copy) {
          return copy.worker == w && copy.task == t;
        });
        if (!accepted && !gates.await_return(key)) {
          return "copy " + to_string(key) + " was not stopped after the B-th result; " +
                 gates.describe();
        }
      }
    }
  }
  if (tested.wait_for(kPatience) != std::future_status::ready) {
    return "the batch did not return once every copy had; " + gates.describe();
  }
  result = tested.get();
  (void)holding.get();
  (void)trailing.get();
  return "";
}

// The threads' outcome against the simulator's; "" or every difference found.
inline std::string compare(const PlanCase& c, const Expected& e, Gates& gates,
                           const rt::BatchResult<Ran>& result) {
  const std::size_t n = c.plan.workers();
  std::string problems;
  const auto differ = [&](const std::string& what) { problems += what + "\n"; };
  // Every copy started, per worker in start order.
  const auto started = gates.started();
  for (std::size_t w = 0; w < n; ++w) {
    if (started[w] != e.starts[w]) {
      std::string s;
      for (std::size_t t : e.starts[w]) s.append(" ").append(std::to_string(t));
      differ("worker " + std::to_string(w) + " started other tasks than [" + s + " ]; " +
             gates.describe());
    }
  }
  // Accepted and stopped copies, from the report and from the tasks themselves.
  std::set<std::pair<Key, bool>> expected_copies;  // (copy, accepted)
  for (const auto& copy : e.copies) {
    expected_copies.insert(
        {{copy.worker, copy.task}, copy.outcome == sim::CopyRecord::Outcome::accepted});
  }
  for (const Key& key : e.unlogged) expected_copies.insert({key, false});
  std::set<std::pair<Key, bool>> reported;
  for (const auto& record : result.report.tasks) {
    reported.insert({{record.worker, record.task}, record.accepted});
  }
  if (result.report.tasks.size() != expected_copies.size() || reported != expected_copies) {
    std::string s;
    for (const auto& [key, accepted] : reported) {
      s.append(" ").append(to_string(key)).append(accepted ? "" : "*");
    }
    differ("report.tasks (* discarded):" + s);
  }
  const auto returned = gates.returned();
  for (const auto& [key, accepted] : expected_copies) {
    const auto it = returned.find(key);
    if (it == returned.end()) {
      differ("copy " + to_string(key) + " never returned");
    } else if (it->second == accepted) {
      differ("copy " + to_string(key) +
             (accepted ? " is accepted but left on a stop request"
                       : " left through its gate, not on its stop"));
    }
  }
  // The results. A fungible race orders them differently on the two engines, both as
  // documented: last_results() in finish order (e.order), BatchResult::values by task number,
  // that is by start order (ascending ctx.task() of the accepted copies).
  std::vector<Key> by_number;
  for (const auto& copy : e.order) by_number.push_back({copy.worker, copy.task});
  std::sort(by_number.begin(), by_number.end(),
            [](const Key& a, const Key& b) { return a.task < b.task; });
  if (result.values.size() != c.batch) differ(std::to_string(result.values.size()) + " values");
  for (std::size_t m = 0; m < std::min(c.batch, result.values.size()); ++m) {
    const Ran& v = result.values[m];
    const Key want = fungible(c.plan) ? by_number[m] : Key{e.results[m].worker, m};
    if (Key{v.worker, v.task} != want) {
      differ("result " + std::to_string(m) + ": simulator " + to_string(want) + ", threads " +
             to_string({v.worker, v.task}));
    }
  }
  std::vector<std::size_t> given(n, 0);
  for (const auto& r : e.results) ++given[r.worker];
  const auto allocation = result.report.allocation.tasks();
  if (!std::equal(given.begin(), given.end(), allocation.begin(), allocation.end())) {
    differ("report.allocation differs from the results each worker gave in the simulator");
  }
  if (result.report.dispatch != c.plan.dispatch()) differ("report.dispatch is not the plan's");
  return problems;
}

TEMPLATE_LIST_TEST_CASE(ATA_ENGINES_PREFIX
                        "a plan has the same outcome in the simulator and on threads",
                        "[engines][plan]" ATA_ENGINES_TAG, LaneKinds) {
  CAPTURE(TestType::name);
  TestType kind;
  for (const PlanCase& c : plan_cases()) {
    CAPTURE(c.name, c.batch);
    const Expected e = simulate(c);
    auto lanes = kind.make(rt::LaneOptions(c.plan.workers()));
    Gates gates(c.plan.workers());
    rt::BatchResult<Ran> result;
    const std::string problem = drive(*lanes, c, e, gates, result);
    REQUIRE(problem == "");
    CHECK(compare(c, e, gates, result) == "");
  }
}

}  // namespace ata::testing::engines

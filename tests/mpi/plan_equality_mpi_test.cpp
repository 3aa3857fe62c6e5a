// [mpi][engines] One interpretation of a plan (issue 20), the MPI back-end's part: every plan of
// tests/engines/plan_table.hpp run by ata::mpi::RankScheduler gives the simulator's outcome:
// who ran which task, which results count, and which copies were stopped. Run by CTest under
// mpirun -n 5: rank 0 drives, ranks 1..4 serve; a plan of n workers runs on ranks 0..n.
//
// How the ranks are made deterministic, as the thread test does it (engines/plan_equality.hpp):
// every task blocks on a gate of its own after telling rank 0 that it started, and a
// controller on rank 0 opens the gates in the simulator's event order, one at a time. The
// scheduler's run() works in a second thread of rank 0 (MPI_THREAD_MULTIPLE); the gates talk
// over a communicator of their own. After opening a copy's gate the controller waits until
// the copy has returned, for a racer also until the root has received its result, then until
// its worker has started the next copy the simulator has it start at that instant, and only
// then opens the next gate. No sleep of a preset length; every wait is bounded (kPatience) and
// fails naming what never happened.
//
// Why the root's receipt: results of different ranks have no order in MPI, so two results
// released one after the other could reach the root swapped, and in a fungible race the
// root's arrival order is the results' order and decides which B count. The test sees the
// root's receipts by the MPI profiling interface: MPI_Improbe below wraps PMPI_Improbe and
// counts the results (wire::kResults) of each rank the root matched (it receives them, and
// handles those of one rank, in the order it matched them). Under quotas no receipt is awaited: a
// share answers once, at its end, and its results go by index.
//
// At t = 0 no holder batch is needed (the thread test has one): the root itself sends the
// first claims of a race, in worker order, before any rank runs.
//
// Differences of numbering and bookkeeping, not of behaviour:
// - in a fungible race the rank back-end numbers worker w's k-th race sample (sum of quotas)
//   + w + k * n (TaskInput::task), the simulator its race samples in start order; the test
//   maps one to the other per worker (quota samples have the simulator's numbers on both). The root
//   keeps a fungible race's results in arrival order, the simulator in finish order: the same order
//   here, as the gates serialise the arrivals;
// - a fungible race's stopped copies drop their results on their rank and are absent from
//   report.tasks (on threads they are discarded records); the gates' log shows their stop;
// - the racer giving the B-th result may start one more sample before the root's stop reaches
//   it (the simulator and the threads start none); that sample must leave on its stop at once.
#include <mpi.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <catch2/catch_session.hpp>
#include <catch2/catch_test_macros.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <future>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "ata/core/error.hpp"
#include "ata/core/fixed_plan_policy.hpp"
#include "ata/mpi/rank_scheduler.hpp"
#include "engines/plan_table.hpp"
#include "wire.hpp"

namespace {

using namespace ata::testing::engines;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kMaxWorkers = 4;  // the table's largest plan
constexpr std::chrono::seconds kPatience{20};

// The gates' messages on their own communicator, every payload u64s: a task tells rank 0
// kStarted (number) and kReturned (number, stopped); rank 0 sends kGo (number, or kAllOpen)
// and kNext (the next plan's worker count, 0: no more); a rank sends kDone when its plan's
// scheduler has shut it down.
enum GateTag : int { kStarted = 1, kReturned = 2, kGo = 3, kNext = 4, kDone = 5 };
constexpr std::uint64_t kAllOpen = ~std::uint64_t{0};

MPI_Comm g_gates = MPI_COMM_NULL;
std::array<MPI_Comm, kMaxWorkers + 1> g_plan_comm{};  // ranks 0..n, for plans of n workers

// Rank 0: the results the root has received, per rank, counted from each plan's start.
std::array<std::atomic<std::size_t>, kMaxWorkers + 1> g_results_received{};

void send_u64s(std::vector<std::uint64_t> values, int to, int tag) {
  MPI_Send(values.data(), static_cast<int>(values.size()), MPI_UINT64_T, to, tag, g_gates);
}

std::vector<std::uint64_t> receive_u64s(int from, int tag, MPI_Status& status) {
  MPI_Probe(from, tag, g_gates, &status);
  int count = 0;
  MPI_Get_count(&status, MPI_UINT64_T, &count);
  std::vector<std::uint64_t> values(static_cast<std::size_t>(count));
  MPI_Recv(values.data(), count, MPI_UINT64_T, status.MPI_SOURCE, status.MPI_TAG, g_gates,
           MPI_STATUS_IGNORE);
  return values;
}

// Polls hot for a moment, then briefly sleeps: six threads (two on rank 0) share two cores.
void back_off(std::size_t& polls) {
  if (++polls < 100) {
    std::this_thread::yield();
  } else {
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

// ---- worker ranks ----

int g_rank = 0;
bool g_all_open = false;  // set by kAllOpen until the next plan: the controller gave up

// Whether rank 0 has opened the gate of task `number`.
bool opened(std::uint64_t number) {
  int waiting = 0;
  MPI_Iprobe(0, kGo, g_gates, &waiting, MPI_STATUS_IGNORE);
  if (waiting) {
    MPI_Status status;
    const auto go = receive_u64s(0, kGo, status).at(0);
    if (go == kAllOpen) {
      g_all_open = true;
    } else if (go != number) {
      throw ata::Error("gate of task " + std::to_string(go) + " opened while task " +
                       std::to_string(number) + " runs");
    }
    return true;
  }
  return g_all_open;
}

// The gated task: returns (worker, number) once its gate opens or the root stops the round.
ata::mpi::Bytes gated(const ata::mpi::TaskInput& in) {
  const std::uint64_t number = in.task;
  send_u64s({number}, 0, kStarted);
  bool stopped = false;
  for (std::size_t polls = 0; !opened(number); back_off(polls)) {
    if (in.stop_requested()) {
      stopped = true;
      break;
    }
  }
  send_u64s({number, stopped ? 1U : 0U}, 0, kReturned);
  return ata::mpi::to_bytes(
      std::vector<double>{static_cast<double>(g_rank - 1), static_cast<double>(number)});
}

void serve_plans() {
  ata::mpi::TaskRegistry tasks;
  tasks.add("gated", gated);
  for (;;) {
    MPI_Status status;
    const auto n = static_cast<std::size_t>(receive_u64s(0, kNext, status).at(0));
    if (n == 0) return;
    g_all_open = false;
    if (static_cast<std::size_t>(g_rank) > n) continue;  // not a worker of this plan
    // A communicator per plan: nothing one plan's scheduler leaves unreceived (a rank's
    // "stopped" after a fungible race) reaches the next.
    MPI_Comm comm = MPI_COMM_NULL;
    MPI_Comm_dup(g_plan_comm[n], &comm);
    (void)ata::mpi::serve_tasks(comm, tasks, ata::runtime::LaneOptions(n));
    MPI_Comm_free(&comm);
    send_u64s({0}, 0, kDone);
  }
}

// ---- rank 0: the controller ----

// What the tasks told rank 0 in this plan, and the waits on it.
class RankGates {
 public:
  explicit RankGates(std::size_t workers) : started_(workers), done_(workers, false) {}

  void open(const Key& key) { send_u64s({key.task}, static_cast<int>(key.worker) + 1, kGo); }
  void open_all() {
    for (std::size_t w = 0; w < started_.size(); ++w) {
      send_u64s({kAllOpen}, static_cast<int>(w) + 1, kGo);
    }
  }
  bool await_starts(std::size_t worker, std::size_t count) {
    return await([&] { return started_[worker].size() >= count; });
  }
  bool await_return(const Key& key) {
    return await([&] { return returned_.contains(key); });
  }
  bool await_received(std::size_t worker, std::size_t results) {
    return await([&] { return g_results_received[worker + 1].load() >= results; });
  }
  // Every rank of the plan out of serve_tasks(): all its messages to rank 0 are in.
  bool await_done() {
    return await([&] { return std::find(done_.begin(), done_.end(), false) == done_.end(); });
  }
  [[nodiscard]] std::size_t started_task(std::size_t worker, std::size_t k) const {
    return started_[worker].at(k);
  }
  [[nodiscard]] const std::vector<std::vector<std::size_t>>& started() const { return started_; }
  [[nodiscard]] const std::map<Key, bool>& returned() const { return returned_; }

  [[nodiscard]] std::string describe() const {
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
  template <class Done>
  bool await(Done done) {
    const auto until = Clock::now() + kPatience;
    for (std::size_t polls = 0; !done(); back_off(polls)) {
      pump();
      if (Clock::now() > until) return done();
    }
    return true;
  }
  void pump() {
    for (;;) {
      int waiting = 0;
      MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, g_gates, &waiting, MPI_STATUS_IGNORE);
      if (!waiting) return;
      MPI_Status status;
      const auto values = receive_u64s(MPI_ANY_SOURCE, MPI_ANY_TAG, status);
      const auto worker = static_cast<std::size_t>(status.MPI_SOURCE) - 1;
      if (status.MPI_TAG == kStarted) started_.at(worker).push_back(values.at(0));
      if (status.MPI_TAG == kReturned) returned_[{worker, values.at(0)}] = values.at(1) != 0;
      if (status.MPI_TAG == kDone) done_.at(worker) = true;
    }
  }
  std::vector<std::vector<std::size_t>> started_;  // per worker, task numbers in start order
  std::map<Key, bool> returned_;                   // per copy: whether it left on its stop
  std::vector<bool> done_;
};

// The number the rank back-end gives worker w's k-th copy: its index under quotas and in an
// indexed race; in a fungible race its quota's samples are numbered as in the simulator, and
// its k-th race sample (sum of quotas) + w + k * n.
std::size_t rank_number(const PlanCase& c, const Expected& e, std::size_t w, std::size_t k) {
  const std::size_t quota = c.plan.quotas()[w];
  if (!fungible(c.plan) || k < quota) return e.starts[w][k];
  return c.plan.quotas().total() + w + (k - quota) * c.plan.workers();
}

// The simulator's copy (w, t) under the rank back-end's number.
Key rank_key(const PlanCase& c, const Expected& e, const Key& sim) {
  const auto& starts = e.starts[sim.worker];
  const auto k =
      static_cast<std::size_t>(std::find(starts.begin(), starts.end(), sim.task) - starts.begin());
  return {sim.worker, rank_number(c, e, sim.worker, k)};
}

// Opens the gates of `c` in the simulator's order while `batch` runs; "" or the first step
// that did not happen.
std::string drive(const PlanCase& c, const Expected& e, RankGates& gates) {
  const std::size_t n = c.plan.workers();
  std::vector<std::size_t> seen(n, 0);  // starts checked so far, per worker
  const auto check_start = [&](std::size_t w, const std::string& after) -> std::string {
    if (!gates.await_starts(w, seen[w] + 1)) {
      return "worker " + std::to_string(w) + " never started its copy " + std::to_string(seen[w]) +
             after + "; " + gates.describe();
    }
    const std::size_t want = rank_number(c, e, w, seen[w]);
    if (gates.started_task(w, seen[w]) != want) {
      return "worker " + std::to_string(w) + " started task " +
             std::to_string(gates.started_task(w, seen[w])) + after + ", the simulator's is " +
             std::to_string(want) + "; " + gates.describe();
    }
    ++seen[w];
    return "";
  };
  for (std::size_t w = 0; w < n; ++w) {  // t = 0
    if (e.starts[w].empty()) continue;
    if (auto problem = check_start(w, " at t = 0"); !problem.empty()) return problem;
  }
  std::vector<std::size_t> released(n, 0);  // per racer: results let through so far
  for (std::size_t m = 0; m < e.order.size(); ++m) {
    const Key key = rank_key(c, e, {e.order[m].worker, e.order[m].task});
    const std::size_t w = key.worker;
    gates.open(key);
    if (!gates.await_return(key)) {
      return "copy " + to_string(key) + " never returned once released (result " +
             std::to_string(m) + " in the simulator's order); " + gates.describe();
    }
    // A fungible race's quota samples are answered one by one too.
    if ((c.plan.is_racer(w) || fungible(c.plan)) && !gates.await_received(w, ++released[w])) {
      return "the root never received the result of " + to_string(key) + "; " + gates.describe();
    }
    if (fungible(c.plan) && m + 1 == c.batch) break;  // the B-th result: the rest is stopped
    if (seen[w] < e.starts[w].size()) {
      if (auto problem = check_start(w, " after " + to_string(key)); !problem.empty()) {
        return problem;
      }
    }
  }
  return "";
}

// Per copy the simulator has start, under the rank back-end's number: whether it must leave on
// its stop (a fungible race's copies still running at the B-th result, the unlogged ones
// included) rather than through its gate.
std::map<Key, bool> expected_stops(const PlanCase& c, const Expected& e) {
  std::map<Key, bool> stops;
  for (const auto& copy : e.copies) {
    stops[rank_key(c, e, {copy.worker, copy.task})] =
        copy.outcome != ata::sim::CopyRecord::Outcome::accepted;
  }
  for (const Key& key : e.unlogged) stops[rank_key(c, e, key)] = true;
  return stops;
}

// The ranks' outcome against the simulator's; "" or every difference found.
std::string compare(const PlanCase& c, const Expected& e, const RankGates& gates,
                    const ata::mpi::RankBatch& batch) {
  const std::size_t n = c.plan.workers();
  std::string problems;
  const auto differ = [&](const std::string& what) { problems += what + "\n"; };
  // Every copy each worker started, in start order, and how it returned.
  auto stops = expected_stops(c, e);
  const std::size_t last = e.order.empty() ? n : e.order.back().worker;
  for (std::size_t w = 0; w < n; ++w) {
    std::vector<std::size_t> want;
    for (std::size_t k = 0; k < e.starts[w].size(); ++k) want.push_back(rank_number(c, e, w, k));
    auto ran = gates.started()[w];
    if (fungible(c.plan) && w == last && ran.size() == want.size() + 1 &&
        ran.back() == rank_number(c, e, w, want.size())) {
      stops[{w, ran.back()}] = true;  // the sample started before the stop reached its rank
      ran.pop_back();
    }
    if (ran != want) {
      differ("worker " + std::to_string(w) + " started other tasks; " + gates.describe());
    }
  }
  for (const auto& [key, stopped] : stops) {
    const auto it = gates.returned().find(key);
    if (it == gates.returned().end()) {
      differ("copy " + to_string(key) + " never returned");
    } else if (it->second != stopped) {
      differ("copy " + to_string(key) +
             (stopped ? " left through its gate, not on its stop"
                      : " is accepted but left on a stop request"));
    }
  }
  // The results: by index under quotas and in an indexed race, in the simulator's finish
  // order in a fungible race; each is (worker, number) of the copy that gave it.
  if (batch.results.size() != c.batch) differ(std::to_string(batch.results.size()) + " results");
  for (std::size_t m = 0; m < std::min(c.batch, batch.results.size()); ++m) {
    const auto got = ata::mpi::read_doubles(batch.results[m]);
    const Key want = fungible(c.plan) ? rank_key(c, e, {e.order[m].worker, e.order[m].task})
                                      : Key{e.results[m].worker, m};
    const Key ranks{static_cast<std::size_t>(got.at(0)), static_cast<std::size_t>(got.at(1))};
    if (ranks != want) {
      differ("result " + std::to_string(m) + ": simulator " + to_string(want) + ", ranks " +
             to_string(ranks));
    }
  }
  // report.tasks: the B accepted results by slot, nothing discarded (the gates let no surplus
  // through, and stopped copies send nothing).
  bool records_match = batch.report.tasks.size() == c.batch;
  for (std::size_t m = 0; records_match && m < c.batch; ++m) {
    const auto& record = batch.report.tasks[m];
    const std::size_t worker = fungible(c.plan) ? e.order[m].worker : e.results[m].worker;
    records_match = record.task == m && record.worker == worker && record.accepted;
  }
  if (!records_match) differ("report.tasks are not the B accepted results by slot");
  std::vector<std::size_t> given(n, 0);
  for (const auto& r : e.results) ++given[r.worker];
  const auto allocation = batch.report.allocation.tasks();
  if (!std::equal(given.begin(), given.end(), allocation.begin(), allocation.end())) {
    differ("report.allocation differs from the results each worker gave in the simulator");
  }
  if (batch.report.dispatch != c.plan.dispatch()) differ("report.dispatch is not the plan's");
  if (!batch.events.empty() || batch.backup_tasks != 0 || batch.late_answers != 0) {
    differ("a rank was lost, a task re-run or an answer late");
  }
  return problems;
}

// Patient enough never to count a gated rank as lost: the gates, not deadlines, decide here.
ata::mpi::RankOptions gated_options() {
  ata::mpi::RankOptions o;
  o.first_deadline = std::chrono::minutes(5);
  o.deadline_floor = std::chrono::minutes(5);
  o.give_up_after = std::chrono::minutes(5);
  return o;
}

// Runs `c` on ranks 0..n through a scheduler of its own, driven by `gates`; "" or the first
// problem. Whatever happens, the plan's ranks leave serve_tasks() before this returns (else the
// job is aborted), so that the next plan starts from a clean state.
std::string run_plan(const PlanCase& c, const Expected& e, RankGates& gates,
                     std::optional<ata::mpi::RankBatch>& batch) {
  const std::size_t n = c.plan.workers();
  for (auto& received : g_results_received) received = 0;
  for (std::size_t r = 1; r <= kMaxWorkers; ++r) send_u64s({n}, static_cast<int>(r), kNext);
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm_dup(g_plan_comm[n], &comm);
  ata::FixedPlanPolicy policy(c.name, c.plan);
  std::string problem;
  {
    ata::mpi::RankScheduler root(comm, policy, gated_options());
    auto running = std::async(std::launch::async, [&] { return root.run(c.batch, "gated", {}); });
    problem = drive(c, e, gates);
    // A fungible race: what still runs must stop on its own, at the root's stop.
    for (const auto& [key, stopped] : expected_stops(c, e)) {
      if (problem.empty() && stopped && !gates.await_return(key)) {
        problem = "copy " + to_string(key) + " was not stopped after the B-th result; " +
                  gates.describe();
      }
    }
    if (!problem.empty()) gates.open_all();
    if (running.wait_for(kPatience) != std::future_status::ready) {
      // run() still waits on a rank: nothing can end this job cleanly.
      std::fprintf(stderr, "%s: %s\nthe batch never returned; %s\n", c.name.c_str(),
                   problem.c_str(), gates.describe().c_str());
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
    try {
      batch = running.get();
    } catch (const std::exception& error) {
      if (problem.empty()) problem = std::string("run() threw: ") + error.what();
    }
    (void)root.shutdown();
    if (!gates.await_done()) {
      if (problem.empty()) problem = "a rank never left serve_tasks(); " + gates.describe();
      gates.open_all();  // a task still blocked on its gate
      if (!gates.await_done()) MPI_Abort(MPI_COMM_WORLD, 3);
    }
  }
  // Every rank is out of serve_tasks(), so whatever it sent the root is here: a result left
  // unreceived is one a stopped copy sent instead of dropping it.
  int unreceived = 0;
  MPI_Iprobe(MPI_ANY_SOURCE, ata::mpi::wire::kResults, comm, &unreceived, MPI_STATUS_IGNORE);
  if (problem.empty() && unreceived) problem = "a stopped copy sent its result to the root";
  MPI_Comm_free(&comm);
  return problem;
}

}  // namespace

// Rank 0's MPI_Improbe: the scheduler's receipts, counted for the controller (see the top).
extern "C" int MPI_Improbe(int source, int tag, MPI_Comm comm, int* flag, MPI_Message* message,
                           MPI_Status* status) {
  MPI_Status own;
  MPI_Status* filled = status == MPI_STATUS_IGNORE ? &own : status;
  const int rc = PMPI_Improbe(source, tag, comm, flag, message, filled);
  if (g_rank == 0 && rc == MPI_SUCCESS && *flag && filled->MPI_TAG == ata::mpi::wire::kResults &&
      filled->MPI_SOURCE >= 0 && static_cast<std::size_t>(filled->MPI_SOURCE) <= kMaxWorkers) {
    ++g_results_received[static_cast<std::size_t>(filled->MPI_SOURCE)];
  }
  return rc;
}

TEST_CASE("engines over MPI: a plan has the same outcome in the simulator and on ranks",
          "[engines][plan][mpi]") {
  for (const PlanCase& c : plan_cases()) {
    CAPTURE(c.name, c.batch);
    const Expected e = simulate(c);
    RankGates gates(c.plan.workers());
    std::optional<ata::mpi::RankBatch> batch;
    REQUIRE(run_plan(c, e, gates, batch) == "");
    CHECK(compare(c, e, gates, *batch) == "");
  }
}

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != static_cast<int>(kMaxWorkers) + 1 || provided < MPI_THREAD_MULTIPLE) {
    if (g_rank == 0) {
      std::fprintf(stderr, "run with mpirun -n %zu and an MPI with MPI_THREAD_MULTIPLE\n",
                   kMaxWorkers + 1);
    }
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Comm_dup(MPI_COMM_WORLD, &g_gates);
  for (std::size_t n = 1; n <= kMaxWorkers; ++n) {
    const bool member = static_cast<std::size_t>(g_rank) <= n;
    MPI_Comm_split(MPI_COMM_WORLD, member ? 0 : MPI_UNDEFINED, g_rank, &g_plan_comm[n]);
  }
  int failed = 0;
  if (g_rank == 0) {
    failed = Catch::Session().run(argc, argv);
    for (std::size_t r = 1; r <= kMaxWorkers; ++r) send_u64s({0}, static_cast<int>(r), kNext);
  } else {
    serve_plans();
  }
  MPI_Finalize();
  return failed == 0 ? 0 : 1;
}

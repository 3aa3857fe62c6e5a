// The rank back-end, run by CTest under mpirun -n 4: rank 0 runs the Catch2 session, ranks
// 1..3 serve the tasks below as a fixed cluster (the "linear" preset, slept, 40 us per unit:
// mean task times 2.3, 4.6 and 7.0 ms).
#include <arpa/inet.h>
#include <mpi.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch_session.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <nlohmann/json.hpp>
#include <set>
#include <span>
#include <string>
#include <tuple>
#include <thread>
#include <vector>

#include "ata/core/error.hpp"
#include "ata/core/fixed_plan_policy.hpp"
#include "ata/core/make_policy.hpp"
#include "ata/mpi/rank_scheduler.hpp"
#include "ata/runtime/batch_scheduler.hpp"
#include "ata/runtime/trace_recorder.hpp"
#include "ata/runtime/worker_pool.hpp"
#include "doorbell.hpp"
#include "support/trace_flows.hpp"

namespace {

constexpr std::size_t kWorkers = 3;
constexpr auto kUnit = std::chrono::microseconds(40);
constexpr std::uint64_t kSeed = 7;
// How long the hanging task hangs unless stopped.
constexpr auto kHang = std::chrono::seconds(10);

// Set by a test that shuts the workers down itself (a lost rank changes how MPI ends).
std::optional<bool> g_shut_down_with_loss;

ata::models::Scenario cluster() { return ata::models::make_preset("linear", kWorkers); }

ata::runtime::LaneOptions cluster_options() {
  auto options = ata::runtime::LaneOptions::from_scenario(cluster(), kUnit);
  options.set_seed(kSeed);
  return options;
}

std::vector<double> true_means() {
  return cluster().scaled(std::chrono::duration<double>(kUnit).count()).means();
}

ata::mpi::TaskRegistry registry() {
  ata::mpi::TaskRegistry tasks;
  // The task's own number, so a test sees which result landed where.
  tasks.add("number", [](const ata::mpi::TaskInput& in) {
    return ata::mpi::to_bytes(std::vector<double>{static_cast<double>(in.task)});
  });
  tasks.add("pid", [](const ata::mpi::TaskInput&) {
    return ata::mpi::to_bytes(std::vector<double>{static_cast<double>(::getpid())});
  });
  tasks.add("throws", [](const ata::mpi::TaskInput&) -> ata::mpi::Bytes {
    throw std::runtime_error("on purpose");
  });
  // Its number, but on rank 1 (worker 0) an odd number throws: a retry elsewhere succeeds.
  tasks.add("odd fails on rank 1", [](const ata::mpi::TaskInput& in) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 1 && in.task % 2 == 1) throw std::runtime_error("odd on rank 1");
    return ata::mpi::to_bytes(std::vector<double>{static_cast<double>(in.task)});
  });
  // Its number, after 80 ms x the rank's number of sleep: task times far above a loaded
  // machine's round trips between processes.
  tasks.add("number, slept 80 ms per rank", [](const ata::mpi::TaskInput& in) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    std::this_thread::sleep_for(std::chrono::milliseconds(80) * rank);
    return ata::mpi::to_bytes(std::vector<double>{static_cast<double>(in.task)});
  });
  // Its number, but the first task rank 3 (worker 2, the slowest) runs in round 4 hangs until
  // it is stopped (at most kHang): a hedged batch copies it elsewhere and withdraws it.
  tasks.add("round 4 hangs on rank 3", [](const ata::mpi::TaskInput& in) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    // The round of the task before on this rank: each scheduler's round 4 hangs once.
    static std::size_t last_round = 0;
    const bool first_of_round_4 = std::exchange(last_round, in.round) != 4 && in.round == 4;
    if (rank == 3 && first_of_round_4) {
      const auto until = std::chrono::steady_clock::now() + kHang;
      while (!in.stop_requested() && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
    return ata::mpi::to_bytes(std::vector<double>{static_cast<double>(in.task)});
  });
  return tasks;
}

// For the tests without faults: a rank descheduled for a while on a loaded machine (CTest runs
// tests in parallel) must not count as lost.
ata::mpi::RankOptions patient() {
  ata::mpi::RankOptions o;
  o.deadline_floor = std::chrono::seconds(2);
  return o;
}

double value(const ata::mpi::Bytes& b) { return ata::mpi::read_doubles(b).at(0); }

std::size_t accepted(const ata::runtime::RoundReport& r) {
  std::size_t n = 0;
  for (const auto& t : r.tasks) n += t.accepted ? 1 : 0;
  return n;
}

std::unique_ptr<ata::Policy> policy(const std::string& name) {
  ata::PolicyOptions o;
  o.alpha = 0.01;
  o.means = true_means();
  return ata::make_policy(name, kWorkers, o);
}

// The pid of every worker rank, by worker index.
std::vector<pid_t> worker_pids() {
  const auto uniform = policy("uta");
  ata::mpi::RankScheduler ask(MPI_COMM_WORLD, *uniform);
  const auto batch = ask.run(kWorkers, "pid", {});
  std::vector<pid_t> pids(kWorkers);
  for (const auto& t : batch.report.tasks) {
    pids[t.worker] = static_cast<pid_t>(value(batch.results[t.task]));
  }
  return pids;
}

}  // namespace

TEST_CASE("every allocated round returns exactly B results, by task", "[mpi]") {
  const auto ata = policy("ata");
  ata::mpi::RankScheduler root(MPI_COMM_WORLD, *ata, patient());
  for (std::size_t round = 1; round <= 20; ++round) {
    const auto batch = root.run(7, "number", {});
    REQUIRE(batch.results.size() == 7);
    for (std::size_t t = 0; t < 7; ++t) REQUIRE(value(batch.results[t]) == static_cast<double>(t));
    REQUIRE(batch.report.allocation.total() == 7);
    REQUIRE(accepted(batch.report) == 7);
    REQUIRE(batch.report.round == round);
    REQUIRE(batch.events.empty());
    REQUIRE(batch.moved_tasks == 0);
  }
  // Every rank answered shares: each link has a learned round trip, none of them slow.
  for (std::size_t w = 0; w < kWorkers; ++w) {
    REQUIRE(root.round_trip(w).has_value());
    REQUIRE(*root.round_trip(w) >= 0.0);
    REQUIRE_FALSE(root.slow_link(w));
  }
}

namespace {

// One greedy round of 5 "number" tasks: 5 distinct results, all accepted, and no rank lost
// (the slowest rank may finish no task in a round; its stop message keeps it alive).
ata::mpi::RankBatch run_race_round(ata::mpi::RankScheduler& root) {
  auto batch = root.run(5, "number", {});
  REQUIRE(batch.results.size() == 5);
  std::set<double> numbers;
  for (const auto& r : batch.results) numbers.insert(value(r));
  REQUIRE(numbers.size() == 5);  // distinct tasks
  REQUIRE(accepted(batch.report) == 5);
  REQUIRE(batch.events.empty());
  return batch;
}

// One round of 6 tasks of `task` (each returning its number): every result its task's, all 6
// accepted, and no rank lost.
ata::mpi::RankBatch run_indexed_round(ata::mpi::RankScheduler& root, const std::string& task) {
  auto batch = root.run(6, task, {});
  REQUIRE(batch.results.size() == 6);
  for (std::size_t t = 0; t < 6; ++t) CHECK(value(batch.results[t]) == static_cast<double>(t));
  CHECK(accepted(batch.report) == 6);
  CHECK(batch.events.empty());
  return batch;
}

}  // namespace

TEST_CASE("greedy rounds keep the first B results and discard the surplus", "[mpi]") {
  const auto gta = policy("gta");
  ata::mpi::RankScheduler root(MPI_COMM_WORLD, *gta, patient());
  std::size_t surplus = 0;
  std::size_t late = 0;
  for (std::size_t round = 1; round <= 20; ++round) {
    const auto batch = run_race_round(root);
    REQUIRE(batch.report.allocation.total() == 5);
    surplus += batch.report.discarded();
    late += batch.late_answers;
  }
  // The fastest rank is 3 times as fast as the slowest: the slow ones are stopped mid-task,
  // and whatever they finished meanwhile is discarded, never counted twice.
  INFO("surplus " << surplus << ", late " << late);
  // The tasks the stops cut short are censored observations: each round stops at least one
  // rank mid-task, one that had started a task no sooner than the round.
  std::lock_guard lock(gta->mutex());
  std::size_t censored = 0;
  for (std::size_t w = 0; w < kWorkers; ++w) censored += gta->stats(w).censored_count();
  CHECK(censored >= 20);
}

TEST_CASE("a fungible race's restart budgets run on the ranks: samples past them are censored",
          "[mpi]") {
  // Each rank's sleeps are m/2 + Exp(m/2): past 0.75 m in e^-0.5 = 61 % of the samples.
  const auto truth = true_means();
  ata::Plan plan = ata::Plan::race(kWorkers, ata::RaceKind::fungible);
  for (std::size_t w = 0; w < kWorkers; ++w) plan.set_restart_after(w, 0.75 * truth[w]);
  ata::FixedPlanPolicy restarting("restarting race", plan);
  ata::mpi::RankScheduler root(MPI_COMM_WORLD, restarting, patient());
  std::size_t restarts = 0;
  for (std::size_t round = 1; round <= 20; ++round) {
    const auto batch = run_race_round(root);
    restarts += batch.report.restarts;
    // A result counts only if it came within its rank's budget, which doubles past a few
    // restarts in a row of one sample (ata::backed_off_budget; a loaded machine oversleeps
    // into them): at most as many as the rank's discarded attempts in the batch.
    std::vector<std::size_t> discarded(kWorkers, 0);
    for (const auto& t : batch.report.tasks) {
      if (!t.accepted) ++discarded[t.worker];
    }
    for (const auto& t : batch.report.tasks) {
      if (!t.accepted) continue;
      CHECK(std::chrono::duration<double>(t.duration).count() <
            ata::backed_off_budget(0.75 * truth[t.worker], discarded[t.worker]));
    }
  }
  CHECK(restarts >= 20);  // about 3 in 5 samples: dozens in 20 rounds
  std::lock_guard lock(restarting.mutex());
  std::size_t censored = 0;
  for (std::size_t w = 0; w < kWorkers; ++w) censored += restarting.stats(w).censored_count();
  CHECK(censored >= restarts);  // and the tasks the stops cut short
}

TEST_CASE("quotas with a fungible race run on the ranks: a quota at most its samples", "[mpi]") {
  // The slowest rank (2) holds a quota of 2 samples, each restarted past 0.75 of its mean; the
  // two faster ranks race. Every result counts, whoever gave it: the quota's samples are
  // numbered 0 and 1, the race's from 2 on.
  const auto truth = true_means();
  ata::Plan plan = ata::Plan(kWorkers).set_quota(2, 2).set_racer(0).set_racer(1).set_race_kind(
      ata::RaceKind::fungible);
  plan.set_restart_after(2, 0.75 * truth[2]);
  ata::FixedPlanPolicy mixed("quota and race", plan);
  ata::mpi::RankScheduler root(MPI_COMM_WORLD, mixed, patient());
  std::size_t from_quota = 0;
  for (std::size_t round = 1; round <= 10; ++round) {
    const auto batch = run_race_round(root);
    CHECK(batch.report.dispatch == ata::Dispatch::mixed);
    CHECK(batch.report.allocation[2] <= 2);
    from_quota += batch.report.allocation[2];
    for (const auto& r : batch.results) {
      const auto number = static_cast<std::size_t>(value(r));
      // Rank 2 runs 0 and 1 only; the racers' numbers are 2 + w + 3 k.
      if (number >= 2) CHECK((number - 2) % kWorkers != 2);
    }
    for (const auto& t : batch.report.tasks) {
      if (t.accepted && t.worker == 2) {
        CHECK(std::chrono::duration<double>(t.duration).count() < 0.75 * truth[2]);
      }
    }
  }
  INFO("results from the quota in 10 rounds: " << from_quota);
}

TEST_CASE("restart budgets of quotas and of an indexed race run on the ranks", "[mpi]") {
  // Budgets of 0.75 of each rank's mean, as in the fungible race's test: a task past it is
  // stopped on its rank and run afresh under its number, as in the simulator.
  const auto truth = true_means();
  const auto budgets = [&](ata::Plan plan) {
    for (std::size_t w = 0; w < kWorkers; ++w) plan.set_restart_after(w, 0.75 * truth[w]);
    return plan;
  };
  for (const ata::Plan& plan : {budgets(ata::Plan::quotas(ata::Allocation({3, 2, 1}))),
                                budgets(ata::Plan::race(kWorkers, ata::RaceKind::indexed))}) {
    CAPTURE(ata::dispatch_name(plan.dispatch()));
    ata::FixedPlanPolicy restarting("restarting", plan);
    ata::mpi::RankScheduler root(MPI_COMM_WORLD, restarting, patient());
    std::size_t restarts = 0;
    for (std::size_t round = 1; round <= 10; ++round) {
      const auto batch = run_indexed_round(root, "number");
      CHECK(batch.backup_tasks == 0);
      restarts += batch.report.restarts;
      std::size_t discarded = 0;
      for (const auto& t : batch.report.tasks) {
        if (!t.accepted) {
          ++discarded;
          CHECK(t.task < 6);  // a restarted attempt keeps its task's number
          continue;
        }
        CHECK(std::chrono::duration<double>(t.duration).count() < 0.75 * truth[t.worker]);
      }
      CHECK(discarded == batch.report.restarts);
    }
    CHECK(restarts >= 10);  // about 3 in 5 attempts: dozens in 10 rounds
    std::lock_guard lock(restarting.mutex());
    std::size_t censored = 0;
    for (std::size_t w = 0; w < kWorkers; ++w) censored += restarting.stats(w).censored_count();
    CHECK(censored == restarts);
  }
}

TEST_CASE("a plan's retries run on the ranks: a failed task runs again on another rank", "[mpi]") {
  // Quotas (worker 0 holds 0, 1 and 2), an indexed race, and quotas (worker 0: 0 and 1) beside
  // one: every odd task that rank 1 runs fails once and is retried elsewhere.
  const std::vector<ata::Plan> plans{
      ata::Plan::quotas(ata::Allocation({3, 2, 1})),
      ata::Plan::race(kWorkers, ata::RaceKind::indexed),
      ata::Plan::quotas(ata::Allocation({2, 0, 0})).set_racer(1).set_racer(2)};
  for (const ata::Plan& plan : plans) {
    CAPTURE(ata::dispatch_name(plan.dispatch()));
    // With a retry per task, every result is its task's, none from worker 0 if odd.
    ata::FixedPlanPolicy retried("retried", ata::Plan(plan).set_retries(1));
    ata::mpi::RankScheduler root(MPI_COMM_WORLD, retried, patient());
    std::size_t retries = 0;
    for (std::size_t round = 1; round <= 5; ++round) {
      const auto batch = run_indexed_round(root, "odd fails on rank 1");
      for (const auto& t : batch.report.tasks) {
        if (t.accepted) CHECK_FALSE((t.worker == 0 && t.task % 2 == 1));
      }
      std::string records;
      for (const auto& t : batch.report.tasks) {
        records += " (" + std::to_string(t.worker) + ", " + std::to_string(t.task) +
                   (t.accepted ? ")" : ")*");
      }
      INFO("records (* discarded):" << records << "; late " << batch.late_answers << ", re-run "
                                    << batch.backup_tasks);
      CHECK(batch.report.discarded() == batch.report.retries);
      retries += batch.report.retries;
    }
    // Worker 0's quota holds task 1 in the quota plans: a retry every round. In the race it
    // claims task 0 first, then whatever it is free for.
    if (plan.dispatch() != ata::Dispatch::pull) CHECK(retries >= 5);
    // Without retries the first failure fails the batch, naming it (the race's worker 0 may
    // claim no odd task). Its other ranks still run their shares after it throws: the next
    // plan's scheduler, at round 1 again, must drop their answers as another batch's (before
    // batch ids on the wire it took them for its own, and this test saw a task twice).
    if (plan.dispatch() == ata::Dispatch::pull) continue;
    ata::FixedPlanPolicy unretried("unretried", plan);
    ata::mpi::RankScheduler strict(MPI_COMM_WORLD, unretried, patient());
    CHECK_THROWS_WITH(strict.run(6, "odd fails on rank 1", {}),
                      Catch::Matchers::ContainsSubstring("odd on rank 1"));
  }
}

TEST_CASE("a plan's backups run on the ranks: a hung task is copied, its copy withdrawn", "[mpi]") {
  // Rank 3 (worker 2) hangs on its first task of round 4. Copies (quotas 2, 2, 2; an indexed
  // race): a free rank runs a copy of it, and the hung copy is stopped when the copy's result
  // is in. On (quotas 1, 1, 4): the free ranks, faster than rank 3, first take over its
  // unstarted tasks.
  const auto copies = ata::BackupOptions{}.set_mode(ata::BackupMode::copies);
  const auto on = ata::BackupOptions{}.set_mode(ata::BackupMode::on);
  const std::vector<ata::Plan> plans{
      ata::Plan::quotas(ata::Allocation({2, 2, 2})).set_backups(copies),
      ata::Plan::race(kWorkers, ata::RaceKind::indexed).set_backups(copies),
      ata::Plan::quotas(ata::Allocation({1, 1, 4})).set_backups(on)};
  for (const ata::Plan& plan : plans) {
    CAPTURE(ata::dispatch_name(plan.dispatch()), ata::backup_mode_name(plan.backups()->mode));
    ata::FixedPlanPolicy hedged("hedged", plan);
    ata::mpi::RankScheduler root(MPI_COMM_WORLD, hedged, patient());
    for (std::size_t round = 1; round <= 6; ++round) {
      CAPTURE(round);
      const auto batch = run_indexed_round(root, "round 4 hangs on rank 3");
      std::string records;
      for (const auto& t : batch.report.tasks) {
        records += " (" + std::to_string(t.worker) + ", " + std::to_string(t.task) +
                   (t.accepted ? ")" : ")*");
      }
      INFO("records (* discarded):" << records << "; copies " << batch.report.backup_copies
                                    << ", takeovers " << batch.report.takeovers);
      CHECK(batch.backup_tasks == 0);  // no share overdue: the plan's rule acted first
      if (round != 4) continue;
      // The hung copy was stopped, not waited for, and its time is a discarded record; its
      // task's result is a copy's, from another rank.
      CHECK(batch.report.backup_copies >= 1);
      const auto hung = std::find_if(batch.report.tasks.begin(), batch.report.tasks.end(),
                                     [](const auto& t) { return !t.accepted; });
      REQUIRE(hung != batch.report.tasks.end());
      CHECK(hung->worker == 2);
      CHECK(hung->duration < kHang);
      CHECK(batch.report.tasks[hung->task].worker != 2);
      if (plan.backups()->mode == ata::BackupMode::on) CHECK(batch.report.takeovers >= 1);
    }
    std::lock_guard lock(hedged.mutex());
    CHECK(hedged.stats(2).censored_count() >= 1);  // the stopped copy's time
  }
}

TEST_CASE("late binding over the ranks hands tasks out one by one, and holds the slowest back",
          "[mpi]") {
  // Quotas 1, 1, 1 of B = 3, late bound, tasks of about 82, 165 and 247 ms (the cluster's
  // times plus 80 ms per rank). Once the means are learned, rank 1 ends its first task and the
  // third one before rank 3 could end one: rank 3 waits, and rank 1 runs two tasks a batch.
  // The rule counts a rank's learned round trip once per task, and with two `yes` beside the
  // ranks those read 16 to 30 ms (the processes wait for a core): with 20 ms per rank, rank 3
  // came in 4 to 9 times in 27. With the scheduler's backups too, the paced race is hedged as
  // any indexed race (nothing is overdue here).
  const auto hedged = GENERATE(false, true);
  CAPTURE(hedged);
  ata::FixedPlanPolicy even("even", ata::Plan::quotas(ata::Allocation({1, 1, 1})));
  auto options = patient();
  options.late_binding = true;
  if (hedged) options.backups.set_mode(ata::BackupMode::copies);
  ata::mpi::RankScheduler root(MPI_COMM_WORLD, even, options);
  constexpr std::size_t kRounds = 10;
  std::vector<std::size_t> ran(kWorkers, 0);  // accepted tasks per worker after round 1
  for (std::size_t round = 1; round <= kRounds; ++round) {
    CAPTURE(round);
    const auto batch = root.run(3, "number, slept 80 ms per rank", {});
    REQUIRE(batch.results.size() == 3);
    for (std::size_t t = 0; t < 3; ++t) CHECK(value(batch.results[t]) == static_cast<double>(t));
    CHECK(accepted(batch.report) == 3);
    CHECK(batch.report.dispatch == ata::Dispatch::pull);
    CHECK(batch.events.empty());
    if (round == 1) continue;  // no means yet: every rank takes a task at once
    for (const auto& t : batch.report.tasks) ran[t.worker] += t.accepted ? 1 : 0;
  }
  INFO("tasks per worker after round 1: " << ran[0] << ", " << ran[1] << ", " << ran[2]);
  INFO("learned round trips (ms): " << root.round_trip(0).value_or(-1) * 1e3 << ", "
                                    << root.round_trip(1).value_or(-1) * 1e3 << ", "
                                    << root.round_trip(2).value_or(-1) * 1e3);
  CHECK(even.round() == kRounds);  // the policy planned every batch
  // Bound to their quotas, the ranks would have run 9 each. Quiet, rank 3 runs none (18, 9, 0);
  // on a loaded machine the learned round trips (counted once per task) may let it in, so the
  // test asks only what holds under load too: the fastest rank ran more than either other.
  CHECK(ran[0] > ran[1]);
  CHECK(ran[0] > ran[2]);
}

TEST_CASE("a fungible race's retries on the ranks replace a failed sample by the next", "[mpi]") {
  // Rank 1's odd samples fail: 3 + 3 k is odd for every other k. Retries 1 allow B failures.
  ata::FixedPlanPolicy retried("retried race",
                               ata::Plan::race(kWorkers, ata::RaceKind::fungible).set_retries(1));
  ata::mpi::RankScheduler root(MPI_COMM_WORLD, retried, patient());
  for (std::size_t round = 1; round <= 5; ++round) {
    const auto batch = root.run(5, "odd fails on rank 1", {});
    REQUIRE(batch.results.size() == 5);
    CHECK(accepted(batch.report) == 5);
    CHECK(batch.report.retries <= 5);
  }
}

TEST_CASE("the learned means are the ranks' measured task times", "[mpi]") {
  // UTA gives every rank the same share, so each gets the same number of observations.
  const auto uta = policy("uta");
  ata::mpi::RankScheduler root(MPI_COMM_WORLD, *uta, patient());
  // What the ranks measured, as the reports carry it. Not the preset: on a loaded machine a
  // sleep overshoots by scheduling latency (3.4 ms learned for 2.3 ms at load average 5).
  std::vector<double> measured(kWorkers, 0.0);
  std::vector<std::size_t> tasks(kWorkers, 0);
  for (int round = 0; round < 40; ++round) {
    const auto batch = root.run(6, "number", {});
    for (const auto& t : batch.report.tasks) {
      if (!t.accepted) continue;
      measured[t.worker] += std::chrono::duration<double>(t.duration).count();
      ++tasks[t.worker];
    }
  }
  const auto truth = true_means();
  for (std::size_t w = 0; w < kWorkers; ++w) {
    const double learned = uta->stats(w).mean();
    REQUIRE(tasks[w] == 80);
    REQUIRE(uta->stats(w).count() == 80);
    const double mean = measured[w] / 80.0;
    INFO("worker " << w << ": learned " << learned << " s, measured " << mean << " s");
    REQUIRE(std::abs(learned - mean) <= 1e-9 * mean);
    // The slowdown was slept: every draw of m/2 + Exp(m/2) is at least m/2, and a sleep never
    // ends early (a bound that load cannot break).
    REQUIRE(mean >= 0.5 * truth[w]);
  }
}

TEST_CASE("allocations equal the thread runtime's where they do not depend on timing", "[mpi]") {
  // OFTA and UTA allocate from known means only; ATA's first round precedes any observation.
  ata::runtime::WorkerPool pool{ata::runtime::PoolOptions(cluster_options())};
  for (const std::string name : {"ofta", "uta", "ata"}) {
    const auto on_ranks = policy(name);
    const auto on_threads = policy(name);
    ata::mpi::RankScheduler root(MPI_COMM_WORLD, *on_ranks, patient());
    ata::runtime::BatchScheduler threads(pool, *on_threads);
    const int rounds = name == "ata" ? 1 : 10;
    for (int k = 0; k < rounds; ++k) {
      const auto ranks = root.run(11, "number", {});
      const auto [values, report] = threads.run(11, [](const auto&) { return 0; });
      INFO(name << " round " << k + 1);
      REQUIRE(std::ranges::equal(ranks.report.allocation.tasks(), report.allocation.tasks()));
    }
  }
}

namespace {

// Reads the bells until `done` holds, for at most 5 s (connections on this host take microseconds).
template <typename Done>
bool collect_until(ata::mpi::detail::Doorbells& bells, ata::mpi::detail::Bell* bell, Done done) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    if (bell != nullptr) bell->advance();
    bells.wait(std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace

TEST_CASE("doorbells count each worker's messages exactly, and drop strangers", "[mpi][doorbell]") {
  namespace detail = ata::mpi::detail;
  detail::Doorbells bells(2, true);
  REQUIRE(bells.listening());
  const auto invitation = bells.invitation();
  detail::Bell bell;
  // Two messages sent before the invitation (to an earlier scheduler): not waited for.
  CHECK(bell.next_sequence() == 1);
  CHECK(bell.next_sequence() == 2);
  ata::mpi::wire::Reader in(invitation);
  bell.answer(in, 1);
  // One sent after it, before the connection is made: it rings no bell, but is waited for.
  CHECK(bell.next_sequence() == 3);
  REQUIRE(collect_until(bells, &bell, [&] { return bells.connected() == 1; }));
  CHECK_FALSE(bells.all_connected());  // worker 0 has not called
  CHECK(bells.news(1));
  bells.received(1, 3);
  CHECK_FALSE(bells.any_news());
  bells.received(1, 2);  // a late answer to the earlier scheduler
  CHECK_FALSE(bells.any_news());

  SECTION("each ring is news until its message is received") {
    for (std::uint64_t sequence = 4; sequence <= 6; ++sequence) {
      CHECK(bell.next_sequence() == sequence);
      bell.ring();
    }
    REQUIRE(collect_until(bells, nullptr, [&] { return bells.news(1); }));
    bells.received(1, 5);
    bells.collect();
    CHECK(bells.news(1));  // number 6 still to come
    bells.received(1, 6);
    CHECK_FALSE(bells.news(1));
    CHECK_FALSE(bells.news(0));
  }
  SECTION("a message received before its bell rang is no news when the bell rings") {
    CHECK(bell.next_sequence() == 4);
    bells.received(1, 4);  // MPI delivered it first
    bell.ring();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    bells.collect();
    CHECK_FALSE(bells.any_news());
  }
  SECTION("a caller without the token is dropped, and a hung-up bell ends waiting on bells") {
    // The listener's port is in the invitation: token, port, addresses (wire.hpp).
    ata::mpi::wire::Reader fields(invitation);
    const std::uint64_t token = fields.u64();
    const auto port = static_cast<std::uint16_t>(fields.u64());
    const int stranger = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(stranger >= 0);
    sockaddr_in root{};
    root.sin_family = AF_INET;
    root.sin_port = htons(port);
    root.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(stranger, reinterpret_cast<const sockaddr*>(&root), sizeof root) == 0);
    ata::mpi::wire::Writer hello;
    hello.u64(token + 1);  // the wrong token, for worker 0
    hello.u64(0);
    hello.u64(0);
    hello.u64(0);
    REQUIRE(::send(stranger, hello.buffer().data(), hello.buffer().size(), MSG_NOSIGNAL) == 32);
    // The root closes it: the stranger reads the end of the stream.
    char byte = 0;
    REQUIRE(collect_until(bells, nullptr,
                          [&] { return ::recv(stranger, &byte, 1, MSG_DONTWAIT) == 0; }));
    ::close(stranger);
    CHECK(bells.connected() == 1);

    detail::Bell first;
    ata::mpi::wire::Reader again(invitation);
    first.answer(again, 0);
    REQUIRE(collect_until(bells, &first, [&] { return bells.all_connected(); }));
    // Worker 1 is invited by a later scheduler: its bell here hangs up.
    detail::Doorbells later(2, true);
    const auto other = later.invitation();
    ata::mpi::wire::Reader moved(other);
    bell.answer(moved, 1);
    REQUIRE(collect_until(bells, nullptr, [&] { return bells.connected() == 1; }));
    CHECK_FALSE(bells.all_connected());  // from now on the root polls
  }
}

TEST_CASE("every rank rings the root's doorbell, and batches are the same without them",
          "[mpi][doorbell]") {
  for (const bool doorbells : {true, false}) {
    for (const std::string strategy : {"ata", "gta"}) {
      INFO(strategy << (doorbells ? " with doorbells" : " without"));
      const auto chosen = policy(strategy);
      auto options = patient();
      options.doorbells = doorbells;
      ata::mpi::RankScheduler root(MPI_COMM_WORLD, *chosen, options);
      // The ranks connect as they read the scheduler's first message.
      const int rounds = doorbells ? 50 : 10;
      for (int round = 0; round < rounds && root.doorbells_connected() < kWorkers; ++round) {
        if (strategy == "gta") {
          (void)run_race_round(root);
          continue;
        }
        const auto batch = root.run(7, "number", {});
        for (std::size_t t = 0; t < 7; ++t) REQUIRE(value(batch.results[t]) == double(t));
      }
      CHECK(root.doorbells_connected() == (doorbells ? kWorkers : 0));
      for (int round = 0; round < 10; ++round) {
        if (strategy == "gta") {
          (void)run_race_round(root);
        } else {
          const auto batch = root.run(7, "number", {});
          REQUIRE(accepted(batch.report) == 7);
          for (std::size_t t = 0; t < 7; ++t) REQUIRE(value(batch.results[t]) == double(t));
          CHECK(batch.events.empty());
        }
      }
    }
  }
}

TEST_CASE("bad uses of the rank back-end are refused clearly", "[mpi][errors]") {
  const auto uta = policy("uta");
  ata::mpi::RankScheduler root(MPI_COMM_WORLD, *uta);
  REQUIRE_THROWS_AS(root.run(0, "number", {}), ata::InvalidArgument);
  REQUIRE_THROWS_AS(root.lost(kWorkers), ata::InvalidArgument);
  REQUIRE_THROWS_AS(root.slow_link(kWorkers), ata::InvalidArgument);
  REQUIRE_THROWS_AS(root.round_trip(kWorkers), ata::InvalidArgument);
  REQUIRE_FALSE(root.round_trip(0).has_value());  // nothing measured yet
  try {
    (void)root.run(3, "throws", {});
    FAIL("a throwing task must fail the batch");
  } catch (const ata::Error& e) {
    REQUIRE(std::string(e.what()).find("task 'throws': on purpose") != std::string::npos);
    REQUIRE(std::string(e.what()).find("rank ") != std::string::npos);
  }
  // The other ranks' answers of the failed batch arrive late and are discarded.
  const auto next = root.run(3, "number", {});
  REQUIRE(accepted(next.report) == 3);
  try {
    (void)root.run(3, "no such task", {});
    FAIL("an unknown task must fail the batch");
  } catch (const ata::Error& e) {
    REQUIRE(std::string(e.what()).find("no task named 'no such task'") != std::string::npos);
  }
  const auto four = ata::make_policy("uta", kWorkers + 1);
  REQUIRE_THROWS_AS(ata::mpi::RankScheduler(MPI_COMM_WORLD, *four), ata::InvalidArgument);
  // A backup rule the rule itself refuses is refused when the scheduler is built.
  ata::mpi::RankOptions bad_backups;
  bad_backups.backups.set_mode(ata::BackupMode::copies).set_threshold_multiple(0.5);
  REQUIRE_THROWS_AS(ata::mpi::RankScheduler(MPI_COMM_WORLD, *uta, bad_backups),
                    ata::InvalidArgument);
}

namespace {

// Plays the plan the test sets next: rounds of quotas, then a race, as ata-auto switches.
class SwitchingPolicy final : public ata::Policy {
 public:
  SwitchingPolicy() : Policy(kWorkers) {}
  [[nodiscard]] std::string_view name() const noexcept override { return "switching"; }
  ata::Plan next = ata::Plan::quotas(ata::Allocation({4, 2, 0}));

 private:
  void choose_plan(std::size_t /*batch*/, ata::Plan& out) override { out = next; }
};

}  // namespace

TEST_CASE("a racer's silence counts only while it races: not between batches, not without work",
          "[mpi]") {
  // A greedy rank is overdue after 1 s + 2 x (its mean + rtt) without a word. Silences longer
  // than that, but with nothing to do: the caller pausing between batches, and rounds of
  // quotas without a share for rank 3, each followed by a race of every rank.
  using namespace std::chrono_literals;
  ata::mpi::RankOptions options;
  options.deadline_floor = 1s;
  options.deadline_factor = 2.0;
  SwitchingPolicy p;
  ata::mpi::RankScheduler root(MPI_COMM_WORLD, p, options);
  const auto race = ata::Plan::race(kWorkers, std::vector<std::size_t>{0, 1, 2},
                                    ata::RaceKind::fungible);
  p.next = race;
  REQUIRE(accepted(root.run(6, "number", {}).report) == 6);
  std::this_thread::sleep_for(1500ms);
  REQUIRE(accepted(root.run(6, "number", {}).report) == 6);
  p.next = ata::Plan::quotas(ata::Allocation({4, 2, 0}));
  const auto quiet_since = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - quiet_since < 1500ms) {
    REQUIRE(accepted(root.run(6, "number", {}).report) == 6);
  }
  p.next = race;
  const auto raced = root.run(6, "number", {});
  REQUIRE(accepted(raced.report) == 6);
  CHECK(root.events().empty());
  for (std::size_t w = 0; w < kWorkers; ++w) CHECK_FALSE(root.lost(w));
}

TEST_CASE("an indexed race runs every index once with or without quotas beside it", "[mpi]") {
  // Pull (an indexed race of every rank) and quotas {2, 0, 0} with ranks 1 and 2 racing for
  // indices 2..6: each index's result is its own, and a quota stays on its rank.
  const auto pull = policy("pull");
  ata::FixedPlanPolicy mixed(
      "mixed", ata::Plan::quotas(ata::Allocation({2, 0, 0})).set_racer(1).set_racer(2));
  for (ata::Policy* p : {pull.get(), static_cast<ata::Policy*>(&mixed)}) {
    CAPTURE(p->name());
    ata::mpi::RankScheduler root(MPI_COMM_WORLD, *p, patient());
    for (std::size_t round = 1; round <= 10; ++round) {
      const auto batch = root.run(7, "number", {});
      REQUIRE(batch.report.dispatch ==
              (p == pull.get() ? ata::Dispatch::pull : ata::Dispatch::mixed));
      for (std::size_t t = 0; t < 7; ++t) {
        REQUIRE(value(batch.results[t]) == static_cast<double>(t));
      }
      REQUIRE(accepted(batch.report) == 7);
      REQUIRE(batch.report.tasks.size() == 7);  // one copy per index
      REQUIRE(batch.report.allocation.total() == 7);
      REQUIRE(batch.events.empty());
      if (p == &mixed) {
        REQUIRE(batch.report.allocation[0] == 2);
        REQUIRE(batch.report.tasks[0].worker == 0);
        REQUIRE(batch.report.tasks[1].worker == 0);
      }
    }
  }
}

namespace {

// Every observer event, in order, and the reports of the batches that ended.
class EventLog final : public ata::runtime::Observer {
 public:
  void on_batch_start(const ata::runtime::BatchStart& start) noexcept override {
    log.push_back("start " + std::to_string(start.round));
    planned.push_back(start.plan.dispatch());
  }
  void on_learned(std::size_t round, std::span<const ata::WorkerStats> learned) noexcept override {
    log.push_back("learned " + std::to_string(round) + " of " + std::to_string(learned.size()));
  }
  void on_batch_end(const ata::runtime::BatchEnd& end) noexcept override {
    log.push_back("end " + std::to_string(end.round) + " " + ata::runtime::outcome_name(end.outcome));
    if (end.report != nullptr) reports.push_back(*end.report);
  }
  std::vector<std::string> log;
  std::vector<ata::Dispatch> planned;
  std::vector<ata::runtime::RoundReport> reports;
};

}  // namespace

using ata::testing::records_of;
using ata::testing::slices_of;

TEST_CASE("an observer of the ranks hears every batch, and its trace holds each task once",
          "[mpi][observer]") {
  // Quotas, a fungible race and an indexed race.
  const std::string name = GENERATE(std::string("ata-e"), std::string("gta"), std::string("pull"));
  const auto p = policy(name);
  ata::mpi::RankScheduler root(MPI_COMM_WORLD, *p, patient());
  EventLog events;
  ata::runtime::TraceRecorder trace(2, 2);
  ata::runtime::ObserverList both({&events, &trace});
  root.set_observer(&both);
  std::vector<ata::runtime::RoundReport> reports;
  for (int k = 0; k < 6; ++k) reports.push_back(root.run(7, "number", {}).report);
  std::vector<std::string> expected;
  for (std::size_t k = 1; k <= 6; ++k) {
    for (const char* what : {"start ", "learned ", "end "}) {
      expected.push_back(what + std::to_string(k) +
                         (what[0] == 'l' ? " of 3" : what[0] == 'e' ? " succeeded" : ""));
    }
  }
  CHECK(events.log == expected);
  REQUIRE(events.reports.size() == 6);
  for (std::size_t k = 0; k < 6; ++k) {
    const auto& report = events.reports[k];
    CHECK(events.planned[k] == report.dispatch);
    CHECK(records_of(report) == records_of(reports[k]));
    // Placed on the root's clock: within the batch, from its start to its return.
    for (const auto& t : report.tasks) {
      REQUIRE(t.has_start());
      CHECK(t.start >= std::chrono::nanoseconds{0});
      CHECK(t.start + t.duration <= report.wall);
    }
  }
  const ata::runtime::TracedProcess process{name, kWorkers, trace.batches()};
  ata::runtime::TraceCounts counts;
  const auto json = nlohmann::json::parse(ata::runtime::chrome_trace_json({&process, 1}, &counts));
  CHECK(counts.unplaced == 0);
  std::size_t slices = 0;
  for (const std::size_t round : {1, 2, 5, 6}) {
    const auto spans = slices_of(json, round);
    CHECK(spans == records_of(reports[round - 1]));
    slices += spans.size();
  }
  CHECK(counts.slices == slices);
  CHECK(ata::testing::check_batch_flows(json, kWorkers) == slices);

  // A batch that fails after its start ends, failed, and the observer hears that too.
  events.log.clear();
  CHECK_THROWS_AS(root.run(3, "throws", {}), ata::Error);
  CHECK(events.log == std::vector<std::string>{"start 7", "end 7 failed"});
  root.set_observer(nullptr);
  (void)root.run(3, "number", {});
  CHECK(events.log.size() == 2);
}

TEST_CASE("task registry and byte helpers refuse bad input", "[mpi][errors]") {
  ata::mpi::TaskRegistry tasks;
  const auto one = [](const ata::mpi::TaskInput&) { return ata::mpi::Bytes{}; };
  REQUIRE_THROWS_AS(tasks.add("", one), ata::InvalidArgument);
  REQUIRE_THROWS_AS(tasks.add("empty", ata::mpi::TaskFunction{}), ata::InvalidArgument);
  tasks.add("one", one);
  REQUIRE_THROWS_AS(tasks.add("one", one), ata::InvalidArgument);
  REQUIRE_THROWS_AS(tasks.find("two"), ata::InvalidArgument);
  REQUIRE(tasks.contains("one"));
  const std::vector<double> xs{1.5, -2.0};
  REQUIRE(ata::mpi::read_doubles(ata::mpi::to_bytes(xs)) == xs);
  REQUIRE_THROWS_AS(ata::mpi::read_doubles(ata::mpi::Bytes(5)), ata::InvalidArgument);
  const auto uta = policy("uta");
  ata::mpi::RankOptions bad;
  bad.lost_workers = {kWorkers};
  REQUIRE_THROWS_AS(ata::mpi::RankScheduler(MPI_COMM_WORLD, *uta, bad), ata::InvalidArgument);
  bad = {};
  bad.deadline_factor = 0.0;
  REQUIRE_THROWS_AS(ata::mpi::RankScheduler(MPI_COMM_WORLD, *uta, bad), ata::InvalidArgument);
}

TEST_CASE("with every rank stopped a batch gives up with a clear error", "[mpi][stop]") {
  const auto pids = worker_pids();
  const auto uta = policy("uta");
  ata::mpi::RankOptions quick;
  quick.first_deadline = std::chrono::milliseconds(300);
  quick.give_up_after = std::chrono::seconds(1);
  ata::mpi::RankScheduler root(MPI_COMM_WORLD, *uta, quick);
  for (const pid_t pid : pids) REQUIRE(::kill(pid, SIGSTOP) == 0);
  try {
    (void)root.run(6, "number", {});
    FAIL("a batch with every rank stopped must give up");
  } catch (const ata::Error& e) {
    INFO(e.what());
    CHECK(std::string(e.what()).find("no worker rank answered for 1 s") != std::string::npos);
    CHECK(std::string(e.what()).find("lost ranks: 1, 2, 3") != std::string::npos);
  }
  for (const pid_t pid : pids) REQUIRE(::kill(pid, SIGCONT) == 0);
  // Their answers come late; each rank is back, and the next batch runs on all of them.
  const auto batch = root.run(6, "number", {});
  REQUIRE(accepted(batch.report) == 6);
  std::size_t back = 0;
  for (const auto& e : batch.events) back += e.kind == ata::mpi::RankEvent::Kind::back ? 1 : 0;
  CHECK(back >= 1);
  // Until every rank has answered: no answer of this scheduler may reach the next one.
  for (int round = 0; round < 50 && (root.lost(0) || root.lost(1) || root.lost(2)); ++round) {
    REQUIRE(accepted(root.run(6, "number", {}).report) == 6);
  }
  REQUIRE_FALSE((root.lost(0) || root.lost(1) || root.lost(2)));
}

TEST_CASE("a stopped rank is survived: lost, its share re-run, then back", "[mpi][stop]") {
  const auto ata = policy("ata");
  ata::mpi::RankScheduler root(MPI_COMM_WORLD, *ata);
  const auto pids = worker_pids();
  std::vector<ata::mpi::RankEvent> events;
  std::size_t backups = 0;
  std::thread resume;
  for (std::size_t round = 1; round <= 600; ++round) {
    if (round == 10) {
      // Rank 2 stops mid-run for 1.5 s: not a crash, a pause (swapping, a debugger).
      REQUIRE(::kill(pids[1], SIGSTOP) == 0);
      resume = std::thread([pid = pids[1]] {
        std::this_thread::sleep_for(std::chrono::milliseconds(1500));
        ::kill(pid, SIGCONT);
      });
    }
    const auto batch = root.run(6, "number", {});
    REQUIRE(accepted(batch.report) == 6);
    for (std::size_t t = 0; t < 6; ++t) REQUIRE(value(batch.results[t]) == static_cast<double>(t));
    events.insert(events.end(), batch.events.begin(), batch.events.end());
    backups += batch.backup_tasks;
    if (!events.empty() && !root.lost(1) && round > 10) break;
  }
  resume.join();
  REQUIRE(events.size() >= 2);
  CHECK(events.front().kind == ata::mpi::RankEvent::Kind::lost);
  CHECK(events.front().rank == 2);
  CHECK(events.back().kind == ata::mpi::RankEvent::Kind::back);
  CHECK(events.back().rank == 2);
  CHECK(events.back().seconds - events.front().seconds > 1.0);
  CHECK(backups > 0);
  g_shut_down_with_loss = root.shutdown();
  CHECK_FALSE(*g_shut_down_with_loss);
}

TEST_CASE("a killed rank is survived under mpirun --enable-recovery", "[mpi][kill]") {
  const auto ata = policy("ata");
  ata::mpi::RankScheduler root(MPI_COMM_WORLD, *ata);
  const auto pids = worker_pids();
  std::vector<ata::mpi::RankEvent> events;
  for (std::size_t round = 1; round <= 40; ++round) {
    if (round == 10) REQUIRE(::kill(pids[2], SIGKILL) == 0);
    const auto batch = root.run(6, "number", {});
    REQUIRE(accepted(batch.report) == 6);
    for (std::size_t t = 0; t < 6; ++t) REQUIRE(value(batch.results[t]) == static_cast<double>(t));
    if (round > 12) REQUIRE(batch.report.allocation[2] == 0);  // no share for the dead rank
    events.insert(events.end(), batch.events.begin(), batch.events.end());
  }
  REQUIRE(events.size() == 1);
  CHECK(events[0].kind == ata::mpi::RankEvent::Kind::lost);
  CHECK(events[0].rank == 3);
  CHECK(events[0].round >= 10);

  // Greedy mode finds the dead rank on its own: it never says it stopped.
  const auto gta = policy("gta");
  ata::mpi::RankScheduler greedy(MPI_COMM_WORLD, *gta);
  std::vector<ata::mpi::RankEvent> greedy_events;
  for (std::size_t round = 1; round <= 300 && greedy_events.empty(); ++round) {
    const auto batch = greedy.run(6, "number", {});
    REQUIRE(accepted(batch.report) == 6);
    greedy_events = batch.events;
  }
  REQUIRE(greedy_events.size() == 1);
  CHECK(greedy_events[0].rank == 3);
  CHECK(greedy.lost(2));

  // A scheduler told of the loss never waits for the rank.
  ata::mpi::RankOptions told;
  told.lost_workers = {2};
  const auto uta = policy("uta");
  ata::mpi::RankScheduler next(MPI_COMM_WORLD, *uta, told);
  for (int round = 0; round < 5; ++round) {
    const auto batch = next.run(6, "number", {});
    REQUIRE(accepted(batch.report) == 6);
    REQUIRE(batch.report.allocation[2] == 0);
    REQUIRE(batch.events.empty());
  }
  g_shut_down_with_loss = next.shutdown();
  CHECK(*g_shut_down_with_loss);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != static_cast<int>(kWorkers) + 1) {
    if (rank == 0) std::fprintf(stderr, "run these tests with mpirun -n %zu\n", kWorkers + 1);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  if (rank != 0) {
    ata::mpi::finish(ata::mpi::serve_tasks(MPI_COMM_WORLD, registry(), cluster_options()));
    return 0;
  }
  const int failed = Catch::Session().run(argc, argv);
  bool lost = false;
  if (g_shut_down_with_loss) {
    lost = *g_shut_down_with_loss;
  } else {
    const auto uta = policy("uta");
    lost = ata::mpi::RankScheduler(MPI_COMM_WORLD, *uta).shutdown();
  }
  ata::mpi::finish(lost, failed == 0 ? 0 : 1);
  return failed == 0 ? 0 : 1;
}

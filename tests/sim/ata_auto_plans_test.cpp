// ata-auto's plans (AtaAutoPolicy::Options::race): race or allocate, how many racers, and its
// change detection and rediscovery while it races, in virtual time.

#include <catch2/catch_test_macros.hpp>
#include <cmath>
#include <cstddef>
#include <vector>

#include "ata/ata.hpp"

using ata::models::Scenario;
using ata::models::TimeModel;
using ata::models::WorkerChange;

namespace {

ata::AtaAutoPolicy::Options racing() {
  return ata::AtaAutoPolicy::Options{}.set_seed(3).set_race(ata::RaceKind::fungible);
}

// Rounds among `rounds` in which `worker` ran a copy.
std::size_t rounds_with(ata::sim::Simulation& sim, std::size_t worker, std::size_t rounds) {
  std::size_t with = 0;
  for (std::size_t k = 0; k < rounds; ++k) {
    (void)sim.run_round();
    bool ran = false;
    for (const auto& c : sim.last_copies()) ran = ran || c.worker == worker;
    with += ran;
  }
  return with;
}

// The paper's law on 12 workers: worker i takes (i + 1) + Exp(mean i + 1).
std::vector<TimeModel> paper_law() {
  std::vector<TimeModel> models;
  for (std::size_t i = 1; i <= 12; ++i) {
    models.push_back(TimeModel::shifted_exponential(static_cast<double>(i), static_cast<double>(i)));
  }
  return models;
}

// Lognormal times of sigma 1.5 (cv 2.9), means 1..12: most tasks are short, a few very long.
Scenario lognormal_cluster() {
  std::vector<TimeModel> models;
  for (std::size_t i = 1; i <= 12; ++i) {
    models.push_back(TimeModel::lognormal(std::log(static_cast<double>(i)) - 1.125, 1.5));
  }
  return Scenario("lognormal", models);
}

}  // namespace

TEST_CASE("ata-auto races memoryless near-homogeneous workers", "[sim][ata-auto]") {
  std::vector<TimeModel> models;
  for (std::size_t i = 0; i < 16; ++i) models.push_back(TimeModel::exponential(1.0 + 0.1 * static_cast<double>(i) / 15.0));
  ata::AtaAutoPolicy policy(16, racing());
  ata::sim::Simulation sim(Scenario("near-homogeneous", models), policy, 16, 1);
  for (int k = 0; k < 600; ++k) (void)sim.run_round();
  REQUIRE(policy.evaluations() >= 1);
  // Every worker is as fast as the others and a stopped copy loses nothing (memoryless times):
  // the best plan races (nearly) all of them.
  CHECK(policy.chosen_racers() >= 12);
  CHECK(policy.rounds_by_racers()[0] < 100);
  CHECK(policy.restart_rounds() == 0);  // memoryless: a restart gains nothing
}

TEST_CASE("ata-auto restarts heavy-tailed tasks and beats the race without restarts",
          "[sim][ata-auto]") {
  const Scenario cluster = lognormal_cluster();
  const auto objective = [&](ata::Policy& policy) {
    ata::sim::Simulation sim(cluster, policy, 12, 1);
    double total = 0.0;
    for (int k = 0; k < 1500; ++k) {
      const auto r = sim.run_round();
      total += r.wall_time + r.worker_time / 12.0;  // the default price, 1/n
    }
    return total;
  };
  ata::AtaAutoPolicy policy(12, racing());
  const double learned = objective(policy);
  CHECK(policy.restart_rounds() > 1000);
  CHECK(policy.chosen_restart() < 4.0);
  // Every race of the m fastest without restarts, from the true means (the frontier's family).
  for (std::size_t m = 1; m <= 12; ++m) {
    ata::FixedPlanPolicy race("race", ata::race_of_fastest(cluster.means(), m));
    CHECK(learned < 0.9 * objective(race));
  }
}

TEST_CASE("ata-auto without race restarts races heavy tails without budgets", "[sim][ata-auto]") {
  // Restart budgets off (Options::race_restarts false).
  ata::AtaAutoPolicy policy(12, racing().set_race_restarts(false));
  ata::sim::Simulation sim(lognormal_cluster(), policy, 12, 1);
  for (int k = 0; k < 1500; ++k) (void)sim.run_round();
  REQUIRE(policy.evaluations() >= 1);
  CHECK(policy.restart_rounds() == 0);  // with them, more than 1000 (the test above)
  CHECK(policy.chosen_racers() > 0);    // it still races
  for (const auto& e : policy.last_evaluation()) CHECK(std::isinf(e.restart_after));
}

TEST_CASE("ata-auto allocates near-deterministic times", "[sim][ata-auto]") {
  std::vector<TimeModel> models;
  for (std::size_t i = 1; i <= 16; ++i) {
    const auto mean = static_cast<double>(i);
    models.push_back(TimeModel::uniform(0.9 * mean, 1.1 * mean));
  }
  ata::AtaAutoPolicy policy(16, racing());
  ata::sim::Simulation sim(Scenario("near-deterministic", models), policy, 23, 1);
  for (int k = 0; k < 600; ++k) (void)sim.run_round();
  REQUIRE(policy.evaluations() >= 1);
  // A racer's stopped copy is work thrown away, and quotas leave no worker waiting: allocate.
  CHECK(policy.chosen_racers() == 0);
  CHECK(policy.rounds_by_racers()[16] == 1);  // the opening, before anything is known
  CHECK(policy.rounds_by_racers()[0] == 599);
}

TEST_CASE("ata-auto without a race kind only allocates", "[sim][ata-auto]") {
  ata::AtaAutoPolicy policy(12, ata::AtaAutoPolicy::Options{}.set_seed(3));
  ata::sim::Simulation sim(Scenario("paper", paper_law()), policy, 12, 1);
  for (int k = 0; k < 300; ++k) (void)sim.run_round();
  CHECK(policy.evaluations() == 0);
  CHECK(policy.rounds_by_racers()[0] == 300);
}

TEST_CASE("ata-auto, racing, drops a member that slows down", "[sim][ata-auto]") {
  // Worker 0, the fastest, becomes 10x slower at round 401.
  const std::vector<WorkerChange> change{{401, 0, TimeModel::shifted_exponential(10.0, 10.0)}};
  ata::AtaAutoPolicy policy(12, racing());
  ata::sim::Simulation sim(Scenario("slowdown", paper_law(), change), policy, 12, 1);
  sim.set_copy_records(true);
  for (int k = 0; k < 300; ++k) (void)sim.run_round();
  REQUIRE(policy.chosen_racers() > 0);
  CHECK(rounds_with(sim, 0, 100) == 100);  // rounds 301-400: a member
  const std::size_t changes = policy.changes_detected();
  (void)rounds_with(sim, 0, 50);  // rounds 401-450: the change is found
  CHECK(policy.changes_detected() > changes);
  // Rounds 451-550: no longer a member. Probes remain: the exploration budget (2% of the
  // objective) buys one exploratory racer every few rounds, shared by the few idle workers.
  CHECK(rounds_with(sim, 0, 100) <= 25);
}

TEST_CASE("ata-auto, racing, rediscovers an idle worker that speeds up", "[sim][ata-auto]") {
  // Worker 11, far too slow to race, becomes the fastest at round 301.
  std::vector<TimeModel> models = paper_law();
  models[11] = TimeModel::shifted_exponential(100.0, 100.0);
  const std::vector<WorkerChange> change{{301, 11, TimeModel::shifted_exponential(0.5, 0.5)}};
  ata::AtaAutoPolicy policy(12, racing());
  ata::sim::Simulation sim(Scenario("idle-speedup", models, change), policy, 12, 1);
  sim.set_copy_records(true);
  CHECK(rounds_with(sim, 11, 300) <= 30);  // idle but for probes
  REQUIRE(policy.chosen_racers() > 0);
  (void)rounds_with(sim, 11, 400);
  CHECK(policy.rediscoveries() >= 1);
  CHECK(rounds_with(sim, 11, 100) >= 95);  // rounds 701-800: a member
}

TEST_CASE("ata-auto's first fungible race races up to 1/p unseen workers", "[sim][ata-auto]") {
  const auto first_racers = [](const ata::AtaAutoPolicy::Options& options) {
    ata::AtaAutoPolicy policy(20, options);
    ata::Plan plan;
    policy.plan(8, plan);
    return plan.racers().size();
  };
  CHECK(first_racers(racing()) == 20);  // p = 1/n: every worker
  CHECK(first_racers(racing().set_objective(ata::Objective{0.0})) == 20);
  CHECK(first_racers(racing().set_objective(ata::Objective{0.25})) == 4);
  CHECK(first_racers(racing().set_objective(ata::Objective{5.0})) == 1);
  // An indexed race claims the B indices one by one: racing many workers would give most of
  // them nothing, so it opens with quotas, as allocation does.
  CHECK(first_racers(racing().set_race(ata::RaceKind::indexed)) == 0);
  CHECK(first_racers(racing().set_race(std::nullopt)) == 0);
}

TEST_CASE("ata-auto, racing, finds the fast workers of a large shuffled cluster at once",
          "[sim][ata-auto]") {
  // 200 workers whose means grow as sqrt(rank), the ranks shuffled: the 10 fastest are
  // anywhere. A first round of quotas over the few explored workers saw at most 3 of them.
  constexpr std::size_t kWorkers = 200;
  std::vector<std::size_t> rank(kWorkers);
  for (std::size_t i = 0; i < kWorkers; ++i) rank[i] = (i * 73 + 11) % kWorkers;  // a bijection
  std::vector<TimeModel> models;
  for (std::size_t i = 0; i < kWorkers; ++i) {
    const double mean = std::sqrt(static_cast<double>(rank[i] + 1));
    models.push_back(TimeModel::shifted_exponential(mean, mean));
  }
  ata::AtaAutoPolicy policy(kWorkers, racing());
  ata::sim::Simulation sim(Scenario("sqrt-shuffled", models), policy, 23, 1);
  (void)sim.run_round();
  std::size_t fast_seen = 0;
  for (std::size_t i = 0; i < kWorkers; ++i)
    fast_seen += rank[i] < 10 && policy.estimated_samples(i) > 0;
  CHECK(fast_seen >= 5);
}

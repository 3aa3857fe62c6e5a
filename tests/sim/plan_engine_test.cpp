// The simulator's interpretation of plans: races of subsets, mixed plans, hedging in a race,
// restarts, and the quota shortcut against the events.

#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_exception.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "ata/ata.hpp"

using ata::models::Scenario;
using ata::models::TimeModel;
using ata::sim::CopyRecord;
using Catch::Approx;
using Catch::Matchers::ContainsSubstring;
using Outcome = CopyRecord::Outcome;

namespace {

Scenario constant(std::vector<double> times) {
  std::vector<TimeModel> models;
  for (const double t : times) models.push_back(TimeModel::constant(t));
  return Scenario("constant", std::move(models));
}

std::size_t count(const std::vector<CopyRecord>& copies, Outcome outcome) {
  std::size_t n = 0;
  for (const auto& c : copies) n += c.outcome == outcome;
  return n;
}

}  // namespace

TEST_CASE("a fungible race of a subset ends at the B-th result and censors what runs",
          "[sim][plan]") {
  const std::vector<std::size_t> members{0, 2};
  ata::FixedPlanPolicy race("race", ata::Plan::race(3, members, ata::RaceKind::fungible));
  ata::sim::Simulation sim(constant({1.0, 0.1, 2.5}), race, 3, 1);
  sim.set_copy_records(true);
  // Worker 0 finishes at 1 and 2, worker 2 at 2.5: the third result; worker 0's third task has
  // run 0.5 by then. Worker 1, the fastest, is not a member and never runs.
  const auto r = sim.run_round();
  CHECK(r.wall_time == 2.5);
  CHECK(r.worker_time == Approx(5.0));
  CHECK(r.proxy_loss == 2.5);  // completed {2, 0, 1}: max(2 x 1, 1 x 2.5)
  CHECK(race.stats(0).count() == 2);
  CHECK(race.stats(0).censored_count() == 1);
  CHECK(race.stats(0).censored_sum() == Approx(0.5));
  CHECK(race.stats(1).count() == 0);
  CHECK(race.stats(2).count() == 1);
  const auto& copies = sim.last_copies();
  CHECK(count(copies, Outcome::accepted) == 3);
  CHECK(count(copies, Outcome::stopped) == 1);
  for (const auto& c : copies) CHECK(c.worker != 1);
  REQUIRE(sim.last_results().size() == 3);
  CHECK(sim.last_results()[2].worker == 2);
}

TEST_CASE("an indexed race of a subset runs each index exactly once", "[sim][plan]") {
  const std::vector<std::size_t> members{1, 2};
  ata::FixedPlanPolicy race("race", ata::Plan::race(3, members, ata::RaceKind::indexed));
  ata::sim::Simulation sim(constant({1.0, 2.0, 4.0}), race, 5, 1);
  sim.set_copy_records(true);
  // t = 0: index 0 on worker 1, 1 on worker 2; t = 2: 2 on worker 1; t = 4: worker 1 first
  // (ties by lower index) takes 3, then worker 2 takes 4, which ends at 8.
  const auto r = sim.run_round();
  CHECK(r.wall_time == 8.0);
  CHECK(r.worker_time == 14.0);
  const std::vector<std::size_t> worker_of{1, 2, 1, 1, 2};
  for (std::size_t t = 0; t < 5; ++t) CHECK(sim.last_results()[t].worker == worker_of[t]);
  CHECK(count(sim.last_copies(), Outcome::accepted) == 5);
  CHECK(sim.last_copies().size() == 5);
}

TEST_CASE("a mixed plan: quotas first, racers claim the rest", "[sim][plan]") {
  ata::Plan plan(3);
  plan.set_quota(0, 2).set_racer(1).set_race_kind(ata::RaceKind::indexed);
  ata::FixedPlanPolicy mixed("mixed", plan);
  ata::sim::Simulation sim(constant({1.0, 1.5, 0.1}), mixed, 4, 1);
  // Indices 0 and 1 are worker 0's quota (ends at 2); 2 and 3 the race's pool, both run by
  // worker 1 (ends at 3). Worker 2 is idle.
  const auto r = sim.run_round();
  CHECK(r.wall_time == 3.0);
  CHECK(r.worker_time == 5.0);
  const std::vector<std::size_t> worker_of{0, 0, 1, 1};
  for (std::size_t t = 0; t < 4; ++t) CHECK(sim.last_results()[t].worker == worker_of[t]);
  CHECK(sim.last_plan().dispatch() == ata::Dispatch::mixed);
}

TEST_CASE("racers of an indexed race hedge an overdue task once the pool is empty", "[sim][plan]") {
  ata::Plan plan = ata::Plan::race(2, ata::RaceKind::indexed);
  plan.set_backups(ata::BackupOptions{}.set_mode(ata::BackupMode::on));
  ata::FixedPlanPolicy race("race", plan);
  ata::sim::Simulation sim(constant({1.0, 100.0}), race, 2, 1);
  // Worker 0 ends index 0 at 1; worker 1's index 1 counts as overdue for worker 0 (its mean
  // unknown: taken as the largest known, 1) after 4 x 1: the copy started at 4 wins at 5.
  const auto r = sim.run_round();
  CHECK(r.wall_time == 5.0);
  CHECK(r.backup_copies == 1);
  CHECK(r.stopped_copies == 1);
  CHECK(r.worker_time == Approx(1.0 + 1.0 + 5.0));
  CHECK(sim.last_results()[1].worker == 0);
  CHECK(race.stats(1).censored_count() == 1);
}

TEST_CASE("a restart budget stops long copies and starts their task afresh", "[sim][plan]") {
  const Scenario heavy("heavy", {TimeModel::lognormal(1.0, 1.5), TimeModel::lognormal(2.0, 1.5)});
  constexpr double kBudget = 3.0;
  ata::Plan plan(2);
  plan.set_quota(0, 6).set_quota(1, 4).set_restart_after(0, kBudget).set_restart_after(1, kBudget);
  ata::FixedPlanPolicy restarting("restarting", plan);
  ata::sim::Simulation sim(heavy, restarting, 10, 3);
  sim.set_copy_records(true);
  std::size_t restarts = 0;
  for (int round = 0; round < 50; ++round) {
    const auto r = sim.run_round();
    restarts += r.restarts;
    const auto& copies = sim.last_copies();
    REQUIRE(count(copies, Outcome::restarted) == r.restarts);
    std::vector<int> accepted(10, 0);
    double work = 0.0;
    for (const auto& c : copies) {
      work += c.end - c.start;
      if (c.outcome == Outcome::restarted) CHECK(c.end - c.start == Approx(kBudget));
      if (c.outcome == Outcome::accepted) {
        ++accepted[c.task];
        CHECK(c.end - c.start <= kBudget);
      }
    }
    for (const int a : accepted) REQUIRE(a == 1);
    CHECK(r.worker_time == Approx(work));
  }
  CHECK(restarts > 0);  // lognormal(sigma 1.5) passes 3 x e^... often enough in 500 tasks
  CHECK(restarting.stats(0).censored_count() + restarting.stats(1).censored_count() == restarts);
}

TEST_CASE("a budget every copy outlasts backs off after 64 restarts in a row, and the batch ends",
          "[sim][plan]") {
  CHECK(ata::backed_off_budget(0.5, 0) == 0.5);
  CHECK(ata::backed_off_budget(0.5, ata::kRestartsBeforeBackoff) == 0.5);
  CHECK(ata::backed_off_budget(0.5, ata::kRestartsBeforeBackoff + 1) == 1.0);
  CHECK(ata::backed_off_budget(0.5, ata::kRestartsBeforeBackoff + 3) == 4.0);
  CHECK(std::isinf(ata::backed_off_budget(0.5, 5000)));
  CHECK(std::isinf(ata::backed_off_budget(std::numeric_limits<double>::infinity(), 70)));
  // Tasks of 10 units, budgets of 1: 64 restarts, then 2, 4, 8, and the copy of budget 16 ends.
  constexpr std::size_t kToFinish = ata::kRestartsBeforeBackoff + 4;
  for (const auto kind : {ata::RaceKind::fungible, ata::RaceKind::indexed}) {
    CAPTURE(static_cast<int>(kind));
    ata::FixedPlanPolicy tight(
        "tight", ata::Plan::race(2, kind).set_restart_after(0, 1.0).set_restart_after(1, 1.0));
    ata::sim::Simulation sim(constant({10.0, 10.0}), tight, 2, 1);
    const auto r = sim.run_round();
    CHECK(r.restarts == 2 * kToFinish);
    CHECK(r.wall_time == Approx(65.0 + 2.0 + 4.0 + 8.0 + 10.0));  // 65 copies of budget 1
  }
  // A copy that ends within its budget starts the count again.
  ata::FixedPlanPolicy quotas("tight quotas",
                              ata::Plan(1).set_quota(0, 2).set_restart_after(0, 1.0));
  ata::sim::Simulation one(constant({10.0}), quotas, 2, 1);
  CHECK(one.run_round().restarts == 2 * kToFinish);
}

TEST_CASE("quota plans: the shortcut and the events agree", "[sim][plan][property]") {
  const Scenario mixture = ata::models::make_preset("mixture", 15);
  for (std::size_t batch : {1u, 7u, 23u, 60u}) {
    CAPTURE(batch);
    ata::UniformPolicy direct(15);
    ata::UniformPolicy evented(15);
    ata::sim::Simulation a(mixture, direct, batch, 9);
    // Hedging that never acts sends the rounds through the events.
    ata::sim::Simulation b(mixture, evented, batch, 9,
                           ata::BackupOptions{}
                               .set_mode(ata::BackupMode::copies)
                               .set_threshold_multiple(std::numeric_limits<double>::infinity()));
    for (int round = 0; round < 20; ++round) {
      const auto ra = a.run_round();
      const auto rb = b.run_round();
      REQUIRE(ra.wall_time == Approx(rb.wall_time).epsilon(1e-12));
      REQUIRE(ra.worker_time == Approx(rb.worker_time).epsilon(1e-12));
      REQUIRE(ra.proxy_loss == rb.proxy_loss);
      for (std::size_t t = 0; t < batch; ++t) {
        REQUIRE(a.last_results()[t].worker == b.last_results()[t].worker);
        REQUIRE(a.last_results()[t].finish == Approx(b.last_results()[t].finish).epsilon(1e-12));
      }
    }
    for (std::size_t i = 0; i < 15; ++i) CHECK(direct.stats(i).count() == evented.stats(i).count());
  }
}

TEST_CASE("race:M races the M fastest by true mean; race:M@F restarts each racer past F x it",
          "[sim][plan][restarts]") {
  ata::PolicyOptions options;
  options.means = {3.0, 1.0, 2.0, 1.0};
  const auto race = ata::make_policy("race:2", 4, options);
  CHECK(race->name() == "race:2");
  const ata::Plan plan = race->plan(5);
  CHECK(plan.dispatch() == ata::Dispatch::greedy);
  CHECK(std::vector<std::size_t>(plan.racers().begin(), plan.racers().end()) ==
        std::vector<std::size_t>{1, 3});
  CHECK_THROWS_MATCHES(ata::make_policy("race:5", 4, options), ata::InvalidArgument,
                       Catch::Matchers::MessageMatches(ContainsSubstring("1 to 4 members")));
  CHECK_THROWS_MATCHES(ata::make_policy("race:0", 4, options), ata::InvalidArgument,
                       Catch::Matchers::MessageMatches(ContainsSubstring("whole number >= 1")));
  CHECK_THROWS_MATCHES(ata::make_policy("race:x", 4, options), ata::InvalidArgument,
                       Catch::Matchers::MessageMatches(ContainsSubstring("race:M needs M")));
  CHECK_THROWS_MATCHES(ata::make_policy("race:2", 4, {}), ata::InvalidArgument,
                       Catch::Matchers::MessageMatches(ContainsSubstring("true mean")));
  CHECK_THROWS_MATCHES(ata::require_policy_name("rase:2"), ata::InvalidArgument,
                       Catch::Matchers::MessageMatches(ContainsSubstring("race:M")));
  CHECK_NOTHROW(ata::require_policy_name("race:1000"));
  CHECK_FALSE(plan.has_restarts());

  const auto restarting = ata::make_policy("race:3@0.5", 4, options);
  CHECK(restarting->name() == "race:3@0.5");
  const ata::Plan with_budgets = restarting->plan(5);
  CHECK(std::vector<std::size_t>(with_budgets.racers().begin(), with_budgets.racers().end()) ==
        std::vector<std::size_t>{1, 2, 3});
  CHECK(with_budgets.restart_after(1) == 0.5);
  CHECK(with_budgets.restart_after(2) == 1.0);
  CHECK(with_budgets.restart_after(3) == 0.5);
  CHECK(with_budgets.restart_after(0) == std::numeric_limits<double>::infinity());
  // The budget applies in the simulator: a copy of constant time 1 on a budget of 0.5 x 1
  // restarts 65 times (the back-off starts past kRestartsBeforeBackoff = 64 in a row), then the
  // budget doubles to 1 and the copy ends at 1.
  ata::PolicyOptions one;
  one.means = {1.0};
  const auto sim_race = ata::make_policy("race:1@0.5", 1, one);
  ata::sim::Simulation sim(constant({1.0}), *sim_race, 1, 1);
  const auto round = sim.run_round();
  CHECK(round.wall_time == Approx(65 * 0.5 + 1.0));
  for (const char* bad : {"race:3@", "race:3@0", "race:3@-1", "race:3@nan", "race:3@inf",
                          "race:3@1x", "race:@1", "race:3@@1"}) {
    CAPTURE(bad);
    CHECK_THROWS_MATCHES(ata::require_policy_name(bad), ata::InvalidArgument,
                         Catch::Matchers::MessageMatches(ContainsSubstring("race:M")));
  }
  CHECK_THROWS_MATCHES(ata::require_policy_name("race:3@0"), ata::InvalidArgument,
                       Catch::Matchers::MessageMatches(ContainsSubstring("finite number > 0")));
}

TEST_CASE("plans that cannot run a batch are refused, naming the policy", "[sim][plan][errors]") {
  ata::Plan short_plan(2);
  short_plan.set_quota(0, 2);
  ata::FixedPlanPolicy too_few("too-few", short_plan);
  ata::sim::Simulation sim(constant({1.0, 1.0}), too_few, 3, 1);
  CHECK_THROWS_MATCHES(sim.run_round(), ata::Error,
                       Catch::Matchers::MessageMatches(ContainsSubstring("policy 'too-few'") &&
                                                       ContainsSubstring("no racer")));
  ata::Plan plan(2);
  CHECK_THROWS_AS(plan.set_restart_after(0, 0.0), ata::InvalidArgument);
  CHECK_THROWS_AS(plan.set_restart_after(0, std::nan("")), ata::InvalidArgument);
  CHECK_THROWS_AS(plan.set_racer(2), ata::InvalidArgument);
  CHECK_THROWS_AS(plan.set_backups(ata::BackupOptions{}.set_max_copies(0)), ata::InvalidArgument);
  plan.set_restart_after(1, std::numeric_limits<double>::infinity());
  CHECK_FALSE(plan.has_restarts());
}

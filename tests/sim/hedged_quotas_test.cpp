// Hedged quotas (quotas with backup copies of overdue tasks) as ata-auto chooses them: the plan
// evaluator's estimate against the simulator's run of the same plan, the choice where copies pay
// and where they cannot, and the frontier yardstick's hedged candidate.

#include <catch2/catch_test_macros.hpp>
#include <cmath>
#include <cstddef>
#include <vector>

#include "ata/ata.hpp"
#include "core/plan_evaluator.hpp"

using ata::models::Scenario;
using ata::models::TimeModel;

namespace {

// Rare hangs: near-deterministic times (uniform within +-10 % of `mean`) of which an attempt
// hangs with probability `hang` for 49 x the mean and is retried: about 50 x the mean then.
TimeModel hanging(double mean, double hang) {
  return TimeModel::outage(TimeModel::uniform(0.9 * mean, 1.1 * mean), hang, 49.0 * mean);
}

struct PerRound {
  double wall = 0.0;
  double work = 0.0;
};

}  // namespace

TEST_CASE("the evaluator's hedged quotas agree with the simulator's run of them", "[sim][plans]") {
  // Six workers, means 1..6 (before hangs), one attempt in 50 hangs; B = 12 on OFTA's quotas.
  std::vector<TimeModel> laws;
  for (int i = 1; i <= 6; ++i) laws.push_back(hanging(static_cast<double>(i), 0.02));
  const Scenario cluster("rare-hangs", laws);
  const std::vector<double> means = cluster.means();
  constexpr std::size_t kBatch = 12;
  constexpr std::size_t kRounds = 20000;
  const auto simulated = [&](const ata::BackupOptions& backups, ata::OraclePolicy& oracle) {
    ata::sim::Simulation sim(cluster, oracle, kBatch, 5, backups);
    PerRound total;
    for (std::size_t k = 0; k < kRounds; ++k) {
      const auto r = sim.run_round();
      total.wall += r.wall_time;
      total.work += r.worker_time;
    }
    return PerRound{total.wall / kRounds, total.work / kRounds};
  };
  ata::OraclePolicy hedged_oracle(means);
  const PerRound hedged = simulated(ata::detail::PlanEvaluator::kHedging, hedged_oracle);
  ata::OraclePolicy plain_oracle(means);
  const PerRound plain = simulated(ata::BackupOptions{}, plain_oracle);

  // The evaluator on the true laws: the shape is worker 1's law over its mean (the workers are
  // a scale family), the rule reads what OFTA's statistics hold after the run (finished times
  // only: the hangs that copies stop leave them).
  ata::models::Rng rng(11);
  std::vector<double> ratios(100000);
  for (double& r : ratios) r = laws[0].sample(rng) / means[0];
  const auto quotas = ata::solve_min_max(means, kBatch);
  const std::vector<std::size_t> tasks(quotas.begin(), quotas.end());
  std::vector<double> rule_means;
  for (std::size_t i = 0; i < means.size(); ++i) {
    rule_means.push_back(hedged_oracle.stats(i).mean());
  }
  ata::detail::PlanEvaluator evaluator(3);
  PerRound estimated;
  PerRound estimated_plain;
  constexpr int kEvaluations = 300;  // of 64 rounds each: about as many rounds as simulated
  for (int e = 0; e < kEvaluations; ++e) {
    (void)evaluator.choose(means, tasks, ratios, kBatch, 0.0, ata::RaceKind::fungible, 0, false,
                           rule_means);
    for (const auto& c : evaluator.all()) {
      if (c.racers != 0) continue;
      PerRound& into = c.hedged ? estimated : estimated_plain;
      into.wall += c.wall / kEvaluations;
      into.work += c.work / kEvaluations;
    }
  }
  // Hedging halves the wall here: the comparison is not one of two equal numbers.
  CHECK(hedged.wall < 0.6 * plain.wall);
  CHECK(std::abs(estimated.wall / hedged.wall - 1.0) < 0.04);
  CHECK(std::abs(estimated.work / hedged.work - 1.0) < 0.04);
  CHECK(std::abs(estimated_plain.wall / plain.wall - 1.0) < 0.04);
  CHECK(std::abs(estimated_plain.work / plain.work - 1.0) < 0.04);
}

TEST_CASE("ata-auto hedges its quotas where rare hangs make copies pay", "[sim][ata-auto]") {
  // 16 like workers, one attempt in 100 hangs; B = 8 < n. At p = 1 (a worker-second costs a
  // wall-second) a race's stopped copies cost more than they save: quotas, and the hangs make
  // backup copies pay.
  std::vector<TimeModel> laws;
  for (int i = 0; i < 16; ++i) laws.push_back(hanging(1.0, 0.01));
  const Scenario cluster("rare-hangs", laws);
  const auto options = [](bool hedge) {
    return ata::AtaAutoPolicy::Options{}
        .set_seed(3)
        .set_race(ata::RaceKind::fungible)
        .set_objective(ata::Objective{1.0})
        .set_hedge_quotas(hedge);
  };
  const auto objective = [&](ata::Policy& policy) {
    ata::sim::Simulation sim(cluster, policy, 8, 1);
    double total = 0.0;
    for (int k = 0; k < 1500; ++k) {
      const auto r = sim.run_round();
      total += r.wall_time + r.worker_time;
    }
    return total;
  };
  ata::AtaAutoPolicy hedging(16, options(true));
  const double hedged = objective(hedging);
  CHECK(hedging.chosen_hedged());
  CHECK(hedging.hedged_rounds() > 1200);
  CHECK(hedging.hedged_rounds() <= hedging.rounds_by_racers()[0]);
  // Without the candidate it races (a race of 8 nearly matches the hedged quotas here: each
  // racer's one copy, a hang covered by a second copy of another racer).
  ata::AtaAutoPolicy without(16, options(false));
  const double unhedged = objective(without);
  CHECK(without.hedged_rounds() == 0);
  for (const auto& e : without.last_evaluation()) CHECK_FALSE(e.hedged);
  CHECK(hedged < 0.98 * unhedged);
  // Against the same quotas waiting for every hang (OFTA's, from the true means).
  ata::OraclePolicy quotas(cluster.means());
  CHECK(hedged < 0.7 * objective(quotas));
}

TEST_CASE("ata-auto does not hedge near-deterministic times", "[sim][ata-auto]") {
  std::vector<TimeModel> laws;
  for (int i = 1; i <= 16; ++i) laws.push_back(hanging(static_cast<double>(i), 0.0));
  ata::AtaAutoPolicy policy(
      16, ata::AtaAutoPolicy::Options{}.set_seed(3).set_race(ata::RaceKind::fungible));
  ata::sim::Simulation sim(Scenario("near-deterministic", laws), policy, 23, 1);
  for (int k = 0; k < 600; ++k) (void)sim.run_round();
  REQUIRE(policy.evaluations() >= 1);
  // No time reaches 4x its mean: no copy could start, so the hedged quotas are not tried.
  CHECK(policy.hedged_rounds() == 0);
  for (const auto& e : policy.last_evaluation()) CHECK_FALSE(e.hedged);
}

TEST_CASE("frontier probes hedged quotas and plays them where they pay", "[sim][frontier]") {
  std::vector<TimeModel> laws;
  for (int i = 0; i < 16; ++i) laws.push_back(hanging(1.0, 0.01));
  ata::sim::ExperimentConfig config;
  config.scenario = Scenario("rare-hangs", laws);
  config.batch = 8;
  config.rounds = 300;
  config.seed = 7;
  config.policy.alpha = config.scenario.max_mean();
  config.objective = ata::Objective{1.0};
  const auto choice = ata::sim::choose_frontier(config);
  CHECK(choice.plan == "ofta+copies");
  const auto run = ata::sim::run_strategy(config, "frontier");
  CHECK(run.backup_copies > 0);  // played with the copies, though config.backups is off
  // A name of the frontier's candidates, not a strategy of its own.
  CHECK_THROWS_AS(ata::sim::run_strategy(config, "ofta+copies"), ata::InvalidArgument);
}

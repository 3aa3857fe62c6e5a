#include "ata/sim/eofta_policy.hpp"

#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <vector>

#include "ata/ata.hpp"
#include "ata/sim/experiment.hpp"
#include "ata/sim/simulation.hpp"

using ata::models::Scenario;
using ata::models::TimeModel;
using Catch::Approx;
using Catch::Matchers::ContainsSubstring;

TEST_CASE("EOFTA plays its solution every round, and its mean round time is the expected one",
          "[sim][eofta]") {
  const Scenario cluster = ata::models::make_preset("cifar", 20);
  const std::vector<TimeModel> laws(cluster.models().begin(), cluster.models().end());
  ata::sim::EoftaPolicy eofta(laws);
  CHECK(eofta.name() == "eofta");
  CHECK_FALSE(eofta.solution().has_value());
  ata::sim::Simulation simulation(cluster, eofta, 23, 4);
  double wall = 0.0;
  constexpr int kRounds = 20000;
  for (int k = 0; k < kRounds; ++k) wall += simulation.run_round().wall_time;
  REQUIRE(eofta.solution().has_value());
  const auto& solution = *eofta.solution();
  CHECK(solution.allocation == ata::sim::solve_eofta(laws, 23).allocation);
  CHECK(eofta.allocate(23) == solution.allocation);
  // 20,000 rounds: the mean's standard error is ~0.3% of it.
  CHECK(wall / kRounds == Approx(solution.expected_round_time).epsilon(0.015));
  CHECK(solution.expected_round_time < 0.95 * solution.ofta_expected_round_time);
}

TEST_CASE("EOFTA follows a scenario's changes", "[sim][eofta]") {
  std::vector<TimeModel> before(4, TimeModel::exponential(1.0));
  before.push_back(TimeModel::exponential(10.0));
  const Scenario cluster("speedup", before, {{5, 4, TimeModel::exponential(0.1)}});
  ata::sim::EoftaPolicy eofta(before);
  ata::sim::Simulation simulation(cluster, eofta, 12, 1);
  ata::Allocation played(5);
  for (int k = 1; k <= 4; ++k) {
    simulation.run_round();
    CHECK(eofta.solution()->allocation[4] == 0);
  }
  simulation.run_round();  // round 5: worker 4 is now the fastest by far
  std::vector<TimeModel> after = before;
  after[4] = TimeModel::exponential(0.1);
  CHECK(eofta.solution()->allocation == ata::sim::solve_eofta(after, 12).allocation);
  CHECK(eofta.solution()->allocation[4] >= 8);
}

TEST_CASE("eofta is a strategy of run_strategy", "[sim][eofta]") {
  ata::sim::ExperimentConfig config;
  config.scenario = ata::models::make_preset("sqrt", 17);
  config.rounds = 50;
  const auto run = ata::sim::run_strategy(config, "eofta");
  CHECK(run.name == "eofta");
  CHECK(run.wall_time < ata::sim::run_strategy(config, "ofta").wall_time);
}

TEST_CASE("EOFTA rejects bad input", "[sim][eofta][errors]") {
  REQUIRE_THROWS_WITH(ata::sim::EoftaPolicy({}), ContainsSubstring("at least one worker"));
  ata::sim::RoundTimeOptions few;
  few.monte_carlo_paths = 0;
  REQUIRE_THROWS_WITH(ata::sim::EoftaPolicy({TimeModel::exponential(1.0)}, few),
                      ContainsSubstring("monte_carlo_paths"));
  ata::sim::EoftaPolicy eofta({TimeModel::exponential(1.0), TimeModel::exponential(2.0)});
  REQUIRE_THROWS_WITH(eofta.set_models({TimeModel::exponential(1.0)}),
                      ContainsSubstring("1 laws for 2 workers"));
  REQUIRE_THROWS_WITH(eofta.allocate(0), ContainsSubstring("B must be >= 1"));
}

// The frontier yardstick (choose_frontier, run_strategy "frontier"): the best fixed plan from
// the true laws, on clusters where the answer is known.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ata/core/error.hpp"
#include "ata/sim/experiment.hpp"

using ata::models::Scenario;
using ata::models::TimeModel;
using ata::sim::ExperimentConfig;

namespace {

ExperimentConfig config_of(std::vector<TimeModel> laws, std::size_t batch,
                           std::optional<double> price) {
  ExperimentConfig config;
  config.scenario = Scenario("test", std::move(laws));
  config.batch = batch;
  config.rounds = 300;
  config.seed = 7;
  config.policy.alpha = config.scenario.max_mean();
  config.objective = ata::Objective{price};
  return config;
}

}  // namespace

TEST_CASE("frontier races all of 64 near-identical exponential workers at p = 0",
          "[sim][frontier]") {
  std::vector<TimeModel> laws;
  for (int i = 0; i < 64; ++i) laws.push_back(TimeModel::exponential(1.0 + 0.001 * i));
  const auto config = config_of(std::move(laws), 16, 0.0);
  const auto choice = ata::sim::choose_frontier(config);
  // Restarts change nothing on memoryless times: a budget is chosen only if its probe beats
  // every plan without one by 1 %, which noise alone rarely does.
  CHECK((choice.plan == "race:64" || choice.plan.starts_with("race:64@")));
  for (const auto& c : choice.candidates) {
    if (c.plan.find('@') == std::string::npos && choice.plan.find('@') != std::string::npos) {
      CHECK(choice.probe_objective * 1.01 < c.objective);
    }
  }
  CHECK(choice.probe_rounds == 200);
  CHECK(choice.probe_seed != config.seed);
  // doubling grid 1..64 (7), refined between 32 and 64 in steps of 8 (3 new), race:64 with 4
  // restart budgets, OFTA with and without backup copies, EOFTA
  CHECK(choice.candidates.size() == 17);
  CHECK(choice.candidates.size() <= ata::sim::frontier_max_probes(64));
  // The run plays the chosen plan on the run's seed.
  const auto run = ata::sim::run_strategy(config, "frontier");
  const auto race = ata::sim::run_strategy(config, choice.plan);
  CHECK(run.name == "frontier");
  REQUIRE(run.frontier);
  CHECK(run.frontier->plan == choice.plan);
  CHECK(run.wall_time == race.wall_time);
  CHECK(run.worker_time == race.worker_time);
}

// On constant times a race of M keeps all M busy for the whole round. At a small p > 0 quotas
// win: the same wall as racing all 40, without the racers' unfinished work. At a large p the
// least work wins, one worker doing every task (race:1). (At p = 1/n = 0.025 a race of the 16
// fastest wins, measured: less work than quotas on all 40.)
TEST_CASE("frontier on constant times 1..40: quotas at a small p, race:1 at a large p",
          "[sim][frontier]") {
  std::vector<TimeModel> laws;
  for (int i = 1; i <= 40; ++i) laws.push_back(TimeModel::constant(static_cast<double>(i)));
  const auto quotas = ata::sim::choose_frontier(config_of(laws, 200, 0.001));
  CHECK((quotas.plan == "ofta" || quotas.plan == "eofta"));
  CHECK(quotas.eofta_note.empty());
  const auto least_work = ata::sim::choose_frontier(config_of(laws, 200, 10.0));
  CHECK(least_work.plan == "race:1");
}

TEST_CASE(
    "frontier: probes bounded by K, bad settings refused, EOFTA left out where it does not fit",
    "[sim][frontier]") {
  std::vector<TimeModel> laws{TimeModel::exponential(1.0), TimeModel::exponential(2.0),
                              TimeModel::constant(1.5)};
  auto config = config_of(laws, 5, std::nullopt);
  config.rounds = 20;
  const auto choice = ata::sim::choose_frontier(config);
  CHECK(choice.probe_rounds == 20);
  // race:1..3, the best with 4 restart budgets, OFTA with and without copies, EOFTA
  CHECK(choice.candidates.size() == 10);
  config.frontier_probe_rounds = 0;
  CHECK_THROWS_AS(ata::sim::choose_frontier(config), ata::InvalidArgument);
  config.frontier_probe_rounds = 200;
  config.frontier_eofta_sweep_terms = 0.0;  // nothing fits
  const auto without = ata::sim::choose_frontier(config);
  CHECK(without.candidates.size() == 9);
  CHECK_FALSE(without.eofta_note.empty());
  CHECK(ata::sim::frontier_race_grid(100) == std::vector<std::size_t>{1, 2, 4, 8, 16, 32, 64, 100});
}

// A copy either ends near 1 or hangs for 100 (one in ten). Stopping it at F x the mean of about
// 11 and starting afresh saves most of the hang, so the best plan restarts, and it beats the
// same race without restarts on both axes. (Not by 2x: in a race the other workers go on while
// one hangs.)
TEST_CASE("frontier restarts a race where copies hang", "[sim][frontier]") {
  std::vector<TimeModel> laws;
  for (int i = 0; i < 6; ++i) {
    laws.push_back(TimeModel::mixture(
        {0.9, 0.1}, {TimeModel::constant(1.0 + 0.1 * i), TimeModel::constant(100.0)}));
  }
  const auto config = config_of(std::move(laws), 12, std::nullopt);
  const auto choice = ata::sim::choose_frontier(config);
  const auto at = choice.plan.find('@');
  REQUIRE(at != std::string::npos);
  const std::string plain = choice.plan.substr(0, at);
  const auto restarting = ata::sim::run_strategy(config, choice.plan);
  const auto without = ata::sim::run_strategy(config, plain);
  CHECK(restarting.wall_time < 0.9 * without.wall_time);
  CHECK(restarting.worker_time < 0.9 * without.worker_time);
}

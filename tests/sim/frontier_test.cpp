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

ExperimentConfig config_of(std::vector<TimeModel> laws, std::size_t batch, std::optional<double> price) {
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

TEST_CASE("frontier races all of 64 near-identical exponential workers at p = 0", "[sim][frontier]") {
  std::vector<TimeModel> laws;
  for (int i = 0; i < 64; ++i) laws.push_back(TimeModel::exponential(1.0 + 0.001 * i));
  const auto config = config_of(std::move(laws), 16, 0.0);
  const auto choice = ata::sim::choose_frontier(config);
  CHECK(choice.plan == "race:64");
  CHECK(choice.probe_rounds == 200);
  CHECK(choice.probe_seed != config.seed);
  // doubling grid 1..64 (7), refined between 32 and 64 in steps of 8 (3 new), OFTA, EOFTA
  CHECK(choice.candidates.size() == 12);
  CHECK(choice.candidates.size() <= ata::sim::frontier_max_probes(64));
  // The run plays the chosen plan on the run's seed.
  const auto run = ata::sim::run_strategy(config, "frontier");
  const auto race = ata::sim::run_strategy(config, "race:64");
  CHECK(run.name == "frontier");
  REQUIRE(run.frontier);
  CHECK(run.frontier->plan == "race:64");
  CHECK(run.wall_time == race.wall_time);
  CHECK(run.worker_time == race.worker_time);
}

// On constant times a race of M keeps all M busy for the whole round. At a small p > 0 quotas
// win: the same wall as racing all 40, without the racers' unfinished work. At a large p the
// least work wins, one worker doing every task (race:1). (At p = 1/n = 0.025 a race of the 16
// fastest wins, measured: less work than quotas on all 40.)
TEST_CASE("frontier on constant times 1..40: quotas at a small p, race:1 at a large p", "[sim][frontier]") {
  std::vector<TimeModel> laws;
  for (int i = 1; i <= 40; ++i) laws.push_back(TimeModel::constant(static_cast<double>(i)));
  const auto quotas = ata::sim::choose_frontier(config_of(laws, 200, 0.001));
  CHECK((quotas.plan == "ofta" || quotas.plan == "eofta"));
  CHECK(quotas.eofta_note.empty());
  const auto least_work = ata::sim::choose_frontier(config_of(laws, 200, 10.0));
  CHECK(least_work.plan == "race:1");
}

TEST_CASE("frontier: probes bounded by K, bad settings refused, EOFTA left out where it does not fit",
          "[sim][frontier]") {
  std::vector<TimeModel> laws{TimeModel::exponential(1.0), TimeModel::exponential(2.0),
                              TimeModel::constant(1.5)};
  auto config = config_of(laws, 5, std::nullopt);
  config.rounds = 20;
  const auto choice = ata::sim::choose_frontier(config);
  CHECK(choice.probe_rounds == 20);
  CHECK(choice.candidates.size() == 5);  // race:1..3, OFTA, EOFTA
  config.frontier_probe_rounds = 0;
  CHECK_THROWS_AS(ata::sim::choose_frontier(config), ata::InvalidArgument);
  config.frontier_probe_rounds = 200;
  config.frontier_eofta_sweep_terms = 0.0;  // nothing fits
  const auto without = ata::sim::choose_frontier(config);
  CHECK(without.candidates.size() == 4);
  CHECK_FALSE(without.eofta_note.empty());
  CHECK(ata::sim::frontier_race_grid(100) == std::vector<std::size_t>{1, 2, 4, 8, 16, 32, 64, 100});
}

// Backup tasks in the simulator's allocated rounds.
#include <catch2/catch_test_macros.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ata/ata.hpp"
#include "ata/sim/experiment.hpp"
#include "ata/sim/simulation.hpp"

using ata::BackupOptions;
using ata::models::Scenario;
using ata::models::TimeModel;

namespace {

const BackupOptions kOn = BackupOptions{}.set_mode(ata::BackupMode::on);

// 12 workers with means 1..12 (shifted exponential) whose attempts hang for 100 x the mean with
// probability 5 %.
Scenario outage_cluster() {
  std::vector<TimeModel> workers;
  for (int i = 1; i <= 12; ++i) {
    const double m = static_cast<double>(i);
    workers.push_back(
        TimeModel::outage(TimeModel::shifted_exponential(m / 2, m / 2), 0.05, 100 * m));
  }
  return Scenario("outage", std::move(workers));
}

std::unique_ptr<ata::Policy> make(const std::string& name, const Scenario& s) {
  ata::PolicyOptions options;
  options.means = s.means();
  options.alpha = s.max_mean();
  options.seed = 5;
  return ata::make_policy(name, s.workers(), options);
}

}  // namespace

TEST_CASE("backups change when a round's results come, never which", "[sim][stragglers]") {
  const Scenario s = outage_cluster();
  const std::size_t batch = 17;
  for (const std::string name : {"ofta", "ata", "ata-e", "ata-auto", "uta"}) {
    auto on_policy = make(name, s);
    auto off_policy = make(name, s);
    ata::sim::Simulation on(s, *on_policy, batch, 9, kOn);
    ata::sim::Simulation off(s, *off_policy, batch, 9);
    std::size_t backups = 0;
    std::size_t stopped = 0;
    for (int k = 0; k < 300; ++k) {
      const auto r_on = on.run_round();
      const auto r_off = off.run_round();
      backups += r_on.backup_copies;
      stopped += r_on.stopped_copies;
      for (const auto* sim : {&on, &off}) {
        const auto& results = sim->last_results();
        REQUIRE(results.size() == batch);  // one result per task index 0..B-1
        const double wall = sim == &on ? r_on.wall_time : r_off.wall_time;
        for (const auto& r : results) {
          REQUIRE(r.worker < s.workers());
          REQUIRE(r.finish > 0.0);
          REQUIRE(r.finish <= wall);
        }
      }
      // Exactly one finished observation per task index; a stopped copy is censored.
      std::size_t finished = 0;
      std::size_t censored = 0;
      for (const auto& st : on_policy->all_stats()) {
        finished += st.count();
        censored += st.censored_count();
      }
      REQUIRE(finished == batch * static_cast<std::size_t>(k + 1));
      REQUIRE(censored == stopped);
    }
    INFO(name);
    CHECK(backups > 0);  // outages: the rule had something to do
  }
}

TEST_CASE("backups: identical seeds give identical runs", "[sim][stragglers]") {
  const Scenario s = outage_cluster();
  auto p1 = make("ata-auto", s);
  auto p2 = make("ata-auto", s);
  ata::sim::Simulation a(s, *p1, 17, 4, kOn);
  ata::sim::Simulation b(s, *p2, 17, 4, kOn);
  for (int k = 0; k < 200; ++k) {
    const auto ra = a.run_round();
    const auto rb = b.run_round();
    REQUIRE(ra.wall_time == rb.wall_time);
    REQUIRE(ra.worker_time == rb.worker_time);
    REQUIRE(ra.takeovers == rb.takeovers);
    REQUIRE(ra.backup_copies == rb.backup_copies);
    for (std::size_t t = 0; t < 17; ++t) {
      REQUIRE(a.last_results()[t].worker == b.last_results()[t].worker);
      REQUIRE(a.last_results()[t].finish == b.last_results()[t].finish);
    }
  }
}

TEST_CASE("backups: never more copies of a task than the bound", "[sim][stragglers]") {
  const Scenario s = outage_cluster();
  for (const std::size_t bound : {1, 2, 3}) {
    auto policy = make("ofta", s);
    ata::sim::Simulation sim(s, *policy, 17, 2, BackupOptions{kOn}.set_max_copies(bound));
    std::size_t most = 0;
    std::size_t backups = 0;
    for (int k = 0; k < 300; ++k) {
      const auto r = sim.run_round();
      most = std::max(most, r.most_copies);
      backups += r.backup_copies;
    }
    INFO("bound " << bound);
    CHECK(most <= bound);
    CHECK((bound == 1) == (backups == 0));
    if (bound > 1) CHECK(most == bound);  // outages make the bound bind
  }
}

TEST_CASE("backups never trigger on a constant-time cluster", "[sim][stragglers]") {
  std::vector<TimeModel> workers;
  for (int i = 1; i <= 8; ++i) workers.push_back(TimeModel::constant(static_cast<double>(i)));
  const Scenario s("constant", std::move(workers));
  for (const std::string name : {"ofta", "ata", "ata-auto"}) {
    auto on_policy = make(name, s);
    auto off_policy = make(name, s);
    ata::sim::Simulation on(s, *on_policy, 13, 1, kOn);
    ata::sim::Simulation off(s, *off_policy, 13, 1);
    for (int k = 0; k < 100; ++k) {
      const auto r_on = on.run_round();
      const auto r_off = off.run_round();
      INFO(name << " round " << k + 1);
      REQUIRE(r_on.backup_copies == 0);
      REQUIRE(r_on.stopped_copies == 0);
      // With the same allocation (OFTA's), take-overs only move an unstarted task to an idle
      // worker at least as fast that ends it earlier. (A learner's allocations differ once a
      // take-over has changed which worker it observed.)
      if (name == "ofta") {
        REQUIRE(r_on.wall_time <= r_off.wall_time);
        REQUIRE(r_on.worker_time <= r_off.worker_time);
      }
    }
  }
}

TEST_CASE("backups cut the wall time of allocated rounds under outages", "[sim][stragglers]") {
  ata::sim::ExperimentConfig config;
  config.scenario = outage_cluster();
  config.batch = 17;
  config.rounds = 500;
  const auto off = ata::sim::run_strategy(config, "ofta");
  config.backups = kOn;
  const auto on = ata::sim::run_strategy(config, "ofta");
  CHECK(on.backup_copies > 0);
  CHECK(on.stopped_copies > 0);
  CHECK(on.wall_time < 0.5 * off.wall_time);
  CHECK(on.worker_time < off.worker_time);
  // GTA ignores backups: identical runs.
  const auto gta_on = ata::sim::run_strategy(config, "gta");
  config.backups = BackupOptions{};
  const auto gta_off = ata::sim::run_strategy(config, "gta");
  CHECK(gta_on.wall_time == gta_off.wall_time);
  CHECK(gta_on.takeovers + gta_on.backup_copies == 0);
}

TEST_CASE("simulation refuses invalid backup options", "[sim][stragglers][errors]") {
  const Scenario s = outage_cluster();
  auto policy = make("ofta", s);
  CHECK_THROWS_AS(ata::sim::Simulation(s, *policy, 3, 1, BackupOptions{kOn}.set_max_copies(0)),
                  ata::InvalidArgument);
}

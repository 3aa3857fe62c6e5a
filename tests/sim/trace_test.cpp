#include "ata/sim/trace.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "ata/ata.hpp"
#include "ata/core/error.hpp"
#include "ata/sim/experiment.hpp"
#include "support/trace_flows.hpp"

namespace {

ata::sim::ExperimentConfig small_config() {
  ata::sim::ExperimentConfig config;
  config.scenario = ata::models::make_preset("mixture", 8);
  config.batch = 12;
  config.rounds = 40;
  config.policy.alpha = config.scenario.max_mean();
  config.backups = ata::BackupOptions{}.set_mode(ata::BackupMode::on).set_threshold_multiple(1.5);
  config.traced_rounds = 5;
  return config;
}

}  // namespace

TEST_CASE("run_strategy keeps the first and last N rounds' copies, as the simulator ran them",
          "[sim][trace]") {
  auto config = small_config();
  const auto run = ata::sim::run_strategy(config, "ata");
  REQUIRE(run.traced_rounds.size() == 10);
  // The same rounds straight from a Simulation with its copy records on.
  ata::PolicyOptions options = config.policy;
  options.means = config.scenario.means();
  options.seed = config.seed;
  const auto policy = ata::make_policy("ata", config.scenario.workers(), options);
  ata::sim::Simulation simulation(config.scenario, *policy, config.batch, config.seed,
                                  config.backups);
  simulation.set_copy_records(true);
  std::size_t t = 0;
  double start = 0.0;
  for (std::size_t k = 1; k <= config.rounds; ++k) {
    const auto r = simulation.run_round();
    if (k <= 5 || k > 35) {
      const auto& traced = run.traced_rounds.at(t++);
      INFO("round " << k);
      CHECK(traced.round == k);
      CHECK(traced.start == start);
      CHECK(traced.wall_time == r.wall_time);
      REQUIRE(traced.copies.size() == simulation.last_copies().size());
      for (std::size_t c = 0; c < traced.copies.size(); ++c) {
        CHECK(traced.copies[c].worker == simulation.last_copies()[c].worker);
        CHECK(traced.copies[c].task == simulation.last_copies()[c].task);
        CHECK(traced.copies[c].end == simulation.last_copies()[c].end);
      }
    }
    start += r.wall_time;
  }
  config.rounds = 7;  // fewer than 2 N: every round, once
  const auto all = ata::sim::run_strategy(config, "ata");
  REQUIRE(all.traced_rounds.size() == 7);
  for (std::size_t k = 0; k < 7; ++k) CHECK(all.traced_rounds[k].round == k + 1);
  config.traced_rounds = 0;
  CHECK(ata::sim::run_strategy(config, "ata").traced_rounds.empty());
}

TEST_CASE("the Chrome trace holds each traced copy once, on its worker's track", "[sim][trace]") {
  const auto config = small_config();
  std::vector<ata::sim::TraceProcess> processes;
  for (const char* name : {"ata", "gta", "pull"}) {
    auto run = ata::sim::run_strategy(config, name);
    processes.push_back({run.name, config.scenario.workers(), std::move(run.traced_rounds)});
  }
  ata::sim::TraceSize size;
  const double unit_us = 1000.0;
  const auto text = ata::sim::chrome_trace_json(processes, unit_us, &size);
  const auto json = nlohmann::json::parse(text);
  const auto& events = json.at("traceEvents");
  CHECK(size.events == events.size());
  CHECK(size.processes == 3);
  CHECK(size.rounds == 30);

  // (pid, round, task, worker, ts) -> how often it appears, from the file and from the runs.
  using Key = std::tuple<int, std::size_t, std::size_t, std::size_t, std::string>;
  std::map<Key, int> in_file;
  std::map<Key, int> expected;
  std::size_t copies = 0;
  std::size_t stopped = 0;
  for (std::size_t p = 0; p < processes.size(); ++p) {
    for (const auto& round : processes[p].rounds) {
      for (const auto& copy : round.copies) {
        ++copies;
        if (copy.outcome != ata::sim::CopyRecord::Outcome::accepted) ++stopped;
        ++expected[{static_cast<int>(p + 1), round.round, copy.task, copy.worker,
                    ata::sim::outcome_name(copy.outcome)}];
      }
    }
  }
  CHECK(size.copies == copies);
  CHECK(stopped > 0);  // backups after 1.5 x the mean: some copies lose their race
  std::size_t round_slices = 0;
  std::size_t copies_marked = 0;
  for (const auto& e : events) {
    if (e.at("ph") != "X") continue;
    if (e.at("cat") == "round") {
      ++round_slices;
      CHECK(e.at("tid").get<std::size_t>() == config.scenario.workers());
      continue;
    }
    const auto outcome = e.at("cat").get<std::string>();
    const auto task = e.at("args").at("task").get<std::size_t>();
    CHECK(e.at("args").at("outcome") == outcome);
    // Marked: how many copies of the task the round ran, when more than one, and the outcome.
    const auto runs = e.at("args").at("copies").get<std::size_t>();
    std::string notes = runs > 1 ? std::to_string(runs) + " copies" : "";
    if (outcome != "accepted") notes += (notes.empty() ? "" : ", ") + outcome;
    CHECK(e.at("name") == "task " + std::to_string(task) + (notes.empty() ? "" : " (" + notes + ")"));
    copies_marked += runs > 1;
    CHECK(e.at("dur").get<double>() >= 0.0);
    ++in_file[{e.at("pid").get<int>(), e.at("args").at("round").get<std::size_t>(), task,
               e.at("tid").get<std::size_t>(), outcome}];
  }
  CHECK(round_slices == 30);
  CHECK(in_file == expected);
  CHECK(copies_marked >= stopped);  // each stopped copy had a rival
  CHECK(ata::testing::check_batch_flows(json, config.scenario.workers()) == copies);

  // Times: the first traced copy of the first process, scaled.
  const auto& first = processes[0].rounds[0];
  for (const auto& e : events) {
    if (e.at("ph") == "X" && e.at("cat") != "round" && e.at("pid") == 1) {
      CHECK(std::abs(e.at("ts").get<double>() - (first.start + first.copies[0].start) * unit_us) <
            1e-3);
      break;
    }
  }
}

TEST_CASE("the Chrome trace refuses a bad unit and a copy off the cluster", "[sim][trace][errors]") {
  std::vector<ata::sim::TraceProcess> processes{{"x", 2, {}}};
  CHECK_THROWS_AS(ata::sim::chrome_trace_json(processes, 0.0), ata::InvalidArgument);
  CHECK_THROWS_AS(ata::sim::chrome_trace_json(processes, NAN), ata::InvalidArgument);
  processes[0].rounds.push_back({1, 0.0, 1.0, {{5, 0, 0.0, 1.0, {}}}});
  CHECK_THROWS_WITH(ata::sim::chrome_trace_json(processes),
                    Catch::Matchers::ContainsSubstring("worker 5 of 2"));
  // Names are escaped.
  processes[0].rounds.clear();
  processes[0].name = "a\"b";
  CHECK_NOTHROW(nlohmann::json::parse(ata::sim::chrome_trace_json(processes)));
}

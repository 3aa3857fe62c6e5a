// Ringmaster ASGD's event stream in virtual time: by hand, against a brute force written like
// the authors' code (a delay counter per worker), and with each selection.
#include "ata/sim/ringmaster_stream.hpp"

#include <algorithm>
#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ata/core/error.hpp"
#include "ata/core/ringmaster_selection.hpp"
#include "ata/models/scenario.hpp"
#include "ata/sim/experiment.hpp"
#include "ata/sim/quadratic_sgd.hpp"

using ata::models::Scenario;
using ata::models::TimeModel;
using ata::sim::RingmasterStream;
using ata::sim::StreamOutcome;
using ata::sim::StreamTask;
using Catch::Approx;
using Catch::Matchers::ContainsSubstring;

namespace {

// Logs the consumer calls: {'s', 0} (worker 0 started), {'a', 1} (worker 1's gradient applied).
using Call = std::pair<char, std::size_t>;
class Log final : public ata::sim::GradientConsumer {
 public:
  void start(std::size_t worker) override { calls.emplace_back('s', worker); }
  void apply(std::size_t worker) override { calls.emplace_back('a', worker); }
  std::vector<Call> calls;
};

ata::sim::StreamOptions options(std::size_t r, bool stops) {
  ata::sim::StreamOptions o;
  o.threshold = r;
  o.stops = stops;
  return o;
}

bool same(const StreamTask& a, const StreamTask& b) {
  return a.worker == b.worker && a.start_version == b.start_version && a.delay == b.delay &&
         a.start == b.start && a.end == b.end && a.outcome == b.outcome;
}

// Two deterministic workers: 1 s and 2.4 s a task.
Scenario two_workers() {
  return Scenario("two", {TimeModel::constant(1.0), TimeModel::constant(2.4)});
}

// The stream as the authors' RingmasterASGD writes it: every worker busy, delays[i] the updates
// since worker i started, a scan for the next completion (ties: lower index). Without stops, a
// stale arrival is discarded and its worker restarted; with stops, every worker whose delay
// reaches R after an update is stopped and restarted at the new point.
std::vector<StreamTask> brute_force(const Scenario& s, std::size_t r, bool stops, std::uint64_t seed,
                                    std::size_t events) {
  const std::size_t n = s.workers();
  std::vector<ata::models::Rng> rngs;
  for (std::size_t i = 0; i < n; ++i) rngs.emplace_back(seed, i);
  std::vector<double> start(n, 0.0);
  std::vector<double> end(n);
  std::vector<std::size_t> version(n, 0);
  std::vector<std::size_t> delays(n, 0);
  for (std::size_t i = 0; i < n; ++i) end[i] = s.models()[i].sample(rngs[i]);
  std::size_t k = 0;
  std::vector<StreamTask> out;
  while (out.size() < events) {
    const auto w = static_cast<std::size_t>(std::min_element(end.begin(), end.end()) - end.begin());
    const double now = end[w];
    const bool fresh = delays[w] < r;
    out.push_back({w, version[w], delays[w], start[w], now,
                   fresh ? StreamOutcome::applied : StreamOutcome::discarded});
    std::vector<std::size_t> restart{w};
    if (fresh) {
      ++k;
      for (auto& d : delays) ++d;
      delays[w] = 0;
      if (stops) {
        for (std::size_t j = 0; j < n; ++j) {
          if (j != w && delays[j] >= r) {
            out.push_back({j, version[j], delays[j], start[j], now, StreamOutcome::stopped});
            restart.push_back(j);
          }
        }
      }
    }
    for (const std::size_t j : restart) {
      delays[j] = 0;
      version[j] = k;
      start[j] = now;
      end[j] = now + s.models()[j].sample(rngs[j]);
    }
  }
  return out;
}

}  // namespace

TEST_CASE("the stream by hand, without stops: stale gradients are discarded", "[sim][ringmaster]") {
  Log log;
  RingmasterStream stream(two_workers(), options(2, false), log);
  stream.set_records(true);
  for (int e = 0; e < 5; ++e) (void)stream.advance();
  // t = 1, 2: worker 0 applies (versions 1, 2); t = 2.4: worker 1's gradient from version 0 has
  // delay 2 = R: discarded, and it restarts at version 2; t = 3, 4: worker 0 again.
  const std::vector<StreamTask> expected{
      {0, 0, 0, 0.0, 1.0, StreamOutcome::applied},   {0, 1, 0, 1.0, 2.0, StreamOutcome::applied},
      {1, 0, 2, 0.0, 2.4, StreamOutcome::discarded}, {0, 2, 0, 2.0, 3.0, StreamOutcome::applied},
      {0, 3, 0, 3.0, 4.0, StreamOutcome::applied}};
  REQUIRE(stream.records().size() == expected.size());
  for (std::size_t j = 0; j < expected.size(); ++j) CHECK(same(stream.records()[j], expected[j]));
  CHECK(stream.version() == 4);
  CHECK(stream.discarded() == 1);
  CHECK(stream.stopped() == 0);
  CHECK(log.calls == std::vector<Call>{{'s', 0}, {'s', 1}, {'a', 0}, {'s', 0}, {'a', 0}, {'s', 0},
                                       {'s', 1}, {'a', 0}, {'s', 0}, {'a', 0}, {'s', 0}});
  // Worker time at t = 4: worker 0 busy 4 s, worker 1 2.4 s and 1.6 s of its running task.
  CHECK(stream.worker_time() == Approx(8.0));
}

TEST_CASE("the stream by hand, R = 3: the slow worker's gradient of delay 2 is applied",
          "[sim][ringmaster]") {
  Log log;
  RingmasterStream stream(two_workers(), options(3, false), log);
  stream.set_records(true);
  for (int e = 0; e < 6; ++e) (void)stream.advance();
  const std::vector<StreamTask> expected{
      {0, 0, 0, 0.0, 1.0, StreamOutcome::applied}, {0, 1, 0, 1.0, 2.0, StreamOutcome::applied},
      {1, 0, 2, 0.0, 2.4, StreamOutcome::applied}, {0, 2, 1, 2.0, 3.0, StreamOutcome::applied},
      {0, 4, 0, 3.0, 4.0, StreamOutcome::applied}, {1, 3, 2, 2.4, 4.8, StreamOutcome::applied}};
  REQUIRE(stream.records().size() == expected.size());
  for (std::size_t j = 0; j < expected.size(); ++j) CHECK(same(stream.records()[j], expected[j]));
  CHECK(stream.version() == 6);
}

TEST_CASE("the stream by hand, with stops: a task is stopped when its delay reaches R",
          "[sim][ringmaster]") {
  Log log;
  RingmasterStream stream(two_workers(), options(2, true), log);
  stream.set_records(true);
  for (int e = 0; e < 4; ++e) (void)stream.advance();
  // At t = 2 the second update gives worker 1's task (from version 0) delay 2: stopped, and
  // restarted at version 2, with worker 0; so again at t = 4.
  const std::vector<StreamTask> expected{
      {0, 0, 0, 0.0, 1.0, StreamOutcome::applied}, {0, 1, 0, 1.0, 2.0, StreamOutcome::applied},
      {1, 0, 2, 0.0, 2.0, StreamOutcome::stopped}, {0, 2, 0, 2.0, 3.0, StreamOutcome::applied},
      {0, 3, 0, 3.0, 4.0, StreamOutcome::applied}, {1, 2, 2, 2.0, 4.0, StreamOutcome::stopped}};
  REQUIRE(stream.records().size() == expected.size());
  for (std::size_t j = 0; j < expected.size(); ++j) CHECK(same(stream.records()[j], expected[j]));
  CHECK(stream.stopped() == 2);
  CHECK(stream.discarded() == 0);
  CHECK(stream.worker_time() == Approx(8.0));  // 4 s each, stopped work included
  CHECK(std::count(log.calls.begin(), log.calls.end(), Call{'a', 1}) == 0);
}

TEST_CASE("the stream matches a brute force written like the authors' code", "[sim][ringmaster]") {
  const Scenario s("five", {TimeModel::exponential(1.0), TimeModel::shifted_exponential(1.0, 1.0),
                            TimeModel::exponential(3.0), TimeModel::gamma(2.0, 2.0),
                            TimeModel::exponential(9.0)});
  for (const bool stops : {false, true}) {
    for (const std::size_t r : {1, 3, 8}) {
      CAPTURE(stops, r);
      Log log;
      auto o = options(r, stops);
      o.seed = 42;
      RingmasterStream stream(s, o, log);
      stream.set_records(true);
      while (stream.records().size() < 600) (void)stream.advance();
      const auto expected = brute_force(s, r, stops, 42, stream.records().size());
      // The brute force may log one event more (stops come in groups); compare the common part.
      const std::size_t common = std::min(expected.size(), stream.records().size());
      REQUIRE(common >= 600);
      for (std::size_t j = 0; j < common; ++j) {
        CAPTURE(j);
        REQUIRE(same(stream.records()[j], expected[j]));
      }
    }
  }
}

TEST_CASE("the stream refuses a threshold of 0", "[sim][ringmaster][errors]") {
  Log log;
  CHECK_THROWS_WITH(RingmasterStream(two_workers(), options(0, true), log), ContainsSubstring("threshold R"));
  auto zero_rounds = options(2, true);
  zero_rounds.gradients_per_round = 0;
  CHECK_THROWS_WITH(RingmasterStream(two_workers(), zero_rounds, log), ContainsSubstring("per round"));
  ata::sim::ExperimentConfig config;
  config.scenario = two_workers();
  CHECK_THROWS_WITH(ata::sim::run_strategy(config, "ringmaster"), ContainsSubstring("threshold R"));
  config.stream_threshold = 2;
  config.sgd_target = 0.1;
  CHECK_THROWS_WITH(ata::sim::run_strategy(config, "ringmaster-ata"), ContainsSubstring("needs SGD"));
}

namespace {

// Four workers of mean 1, then `slow` of mean 40; R = 4 gives t(4) = 8 / 4 = 2: the four.
std::vector<TimeModel> fast_and_slow(std::size_t slow) {
  std::vector<TimeModel> models(4, TimeModel::exponential(1.0));
  models.insert(models.end(), slow, TimeModel::exponential(40.0));
  return models;
}

// The workers selected by the bound: the selection without its probe.
std::vector<std::size_t> chosen(const ata::RingmasterSelection& selection) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < selection.workers(); ++i) {
    if (selection.selected(i) && selection.probing() != std::optional<std::size_t>{i}) out.push_back(i);
  }
  return out;
}

}  // namespace

TEST_CASE("the oracle keeps the fastest by the bound busy, and follows a change",
          "[sim][ringmaster]") {
  // From version 50 (round 51, one gradient a round) worker 0 is 100 times slower:
  // t(3) = 7 / 3 < 100, so it leaves.
  const Scenario s("change", fast_and_slow(4), {{51, 0, TimeModel::exponential(100.0)}});
  Log log;
  auto o = options(4, true);
  o.selection = ata::sim::StreamSelection::oracle;
  RingmasterStream stream(s, o, log);
  stream.set_records(true);
  for (std::size_t i = 0; i < s.workers(); ++i) CHECK(stream.busy(i) == (i < 4));
  while (stream.version() < 200) (void)stream.advance();
  for (const auto& t : stream.records()) {
    CHECK(t.worker < 4);
    if (t.worker == 0) CHECK(t.start_version < 50);
  }
  CHECK_FALSE(stream.busy(0));
}

TEST_CASE("the learned selection converges to the oracle's set", "[sim][ringmaster]") {
  const Scenario s("fast-and-slow", fast_and_slow(12));
  for (const bool stops : {false, true}) {
    CAPTURE(stops);
    Log log;
    auto o = options(4, stops);
    o.selection = ata::sim::StreamSelection::learned;
    RingmasterStream stream(s, o, log);
    stream.set_records(true);
    while (stream.version() < 20000) (void)stream.advance();
    REQUIRE(stream.learned() != nullptr);
    CHECK(chosen(*stream.learned()) == std::vector<std::size_t>{0, 1, 2, 3});
    // The slow workers cost their first tasks and the probes: a small share of the worker time.
    double slow = 0.0;
    for (const auto& t : stream.records()) {
      if (t.worker >= 4) slow += t.end - t.start;
    }
    CHECK(slow < 0.05 * stream.worker_time());
  }
}

TEST_CASE("the learned selection finds a worker that sped up while idle", "[sim][ringmaster]") {
  // Worker 4 (mean 40) becomes as fast as the others at version 500 (round 26 of 20 gradients);
  // only a probe can tell.
  const Scenario s("speed-up", fast_and_slow(4), {{26, 4, TimeModel::exponential(1.0)}});
  for (const double budget : {0.0, 0.02}) {
    CAPTURE(budget);
    Log log;
    auto o = options(4, true);
    o.selection = ata::sim::StreamSelection::learned;
    o.learning.exploration_budget = budget;
    o.gradients_per_round = 20;
    RingmasterStream stream(s, o, log);
    while (stream.version() < 20000) (void)stream.advance();
    const auto set = chosen(*stream.learned());
    CHECK((std::find(set.begin(), set.end(), 4) != set.end()) == (budget > 0.0));
    if (budget > 0.0) CHECK(stream.learned()->probes() > 0);
  }
}

TEST_CASE("the quadratic's gradient split into compute and apply is one SGD step", "[sim][sgd]") {
  ata::sim::QuadraticSgd whole(8, 0.1, 0.5, 3);
  ata::sim::QuadraticSgd split(8, 0.1, 0.5, 3);
  std::vector<double> g(8);
  for (int k = 0; k < 5; ++k) {
    whole.step(1);
    split.stochastic_gradient(g);
    split.apply(g);
  }
  CHECK(whole.point() == split.point());
  std::vector<double> short_gradient(7);
  CHECK_THROWS_WITH(split.stochastic_gradient(short_gradient), ContainsSubstring("8 coordinates"));
  CHECK_THROWS_WITH(split.apply(short_gradient), ContainsSubstring("got 7"));
}

TEST_CASE("a stream run is reproducible from the seed and times its target", "[sim][ringmaster]") {
  ata::sim::ExperimentConfig config;
  config.scenario = ata::models::make_preset("cifar", 12);
  config.sgd = true;
  config.sgd_dim = 10;
  config.sgd_noise = 0.1;
  config.stream_step = 0.05;
  config.stream_threshold = 8;
  config.sgd_target = 0.05;
  config.rounds = 100;
  for (const char* name : {"ringmaster", "ringmaster-ata", "ringmaster-oracle"}) {
    CAPTURE(name);
    const auto a = ata::sim::run_strategy(config, name);
    const auto b = ata::sim::run_strategy(config, name);
    REQUIRE(a.target_wall_time);
    CHECK(a.target_wall_time == b.target_wall_time);
    CHECK(a.worker_time == b.worker_time);
    CHECK(*a.final_suboptimality <= 0.05);
    CHECK(a.wall_time == *a.target_wall_time);  // the stream ends at its target
    CHECK(a.gradients_applied == *a.target_gradients);
    CHECK(a.stream);
  }
  config.seed = 2;
  CHECK(ata::sim::run_strategy(config, "ringmaster").worker_time !=
        ata::sim::run_strategy(ata::sim::ExperimentConfig{config}, "ringmaster-oracle").worker_time);
}

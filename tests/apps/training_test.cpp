#include <sched.h>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <string>
#include <utility>
#include <vector>

#include "ata/core/error.hpp"
#include "ata/core/make_policy.hpp"
#include "ata/runtime/batch_scheduler.hpp"
#include "problems.hpp"
#include "training.hpp"
#include "training_lanes.hpp"
#include "apps/small_cluster.hpp"
#include "support/without_backups.hpp"

using Catch::Matchers::ContainsSubstring;


TEST_CASE("SGD and SPPM reach the target under every strategy", "[apps][training]") {
  const ata::ml::LogisticProblem logistic(ata::ml::make_classification(300, 5, 3), 1e-2,
                                          "synthetic");
  const ata::ml::LeastSquaresProblem squares(ata::ml::make_regression(300, 5, 4), "synthetic");
  for (const auto method : {ata::ml::Method::sgd, ata::ml::Method::prox}) {
    const auto config = small_cluster(method);
    for (const ata::ml::Problem* problem : {static_cast<const ata::ml::Problem*>(&logistic),
                                            static_cast<const ata::ml::Problem*>(&squares)}) {
      for (const auto name : ata::policy_names()) {
        const auto run = ata::ml::train(*problem, config, name);
        INFO(problem->describe() << ", " << name
                                 << (method == ata::ml::Method::sgd ? ", SGD" : ", prox"));
        CHECK(run.reached);
        CHECK(run.final_gap <=
              0.05 * (problem->loss(problem->initial_point()) - problem->optimal_loss()));
        CHECK(run.worker_seconds > 0.0);
        CHECK(run.trace.size() == run.rounds);
      }
    }
  }
}

TEST_CASE("allocated strategies follow the same iterates", "[apps][training]") {
  const ata::ml::LogisticProblem logistic(ata::ml::make_classification(200, 4, 5), 1e-2,
                                          "synthetic");
  auto config = small_cluster(ata::ml::Method::sgd);
  config.max_rounds = 40;
  config.target_gap = 1e-9;  // run all 40 rounds
  const auto ofta = ata::ml::train(logistic, config, "ofta");
  const auto uta = ata::ml::train(logistic, config, "uta");
  const auto pull = ata::ml::train(logistic, config, "pull");
  REQUIRE(ofta.rounds == 40);
  CHECK(ofta.final_gap == uta.final_gap);  // task j of round k draws the same sample anywhere
  CHECK(ofta.final_gap == pull.final_gap);
  // Backup copies and take-overs change where a task runs, never its result.
  auto with_backups = config;
  with_backups.backups = ata::BackupOptions{}.set_mode(ata::BackupMode::on);
  CHECK(ata::ml::train(logistic, with_backups, "ofta").final_gap == ofta.final_gap);
}

TEST_CASE("training rejects bad settings", "[apps][training][errors]") {
  const ata::ml::QuadraticProblem quadratic(4, 1e-3);
  auto config = small_cluster(ata::ml::Method::prox);
  REQUIRE_THROWS_WITH(ata::ml::train(quadratic, config, "ofta"),
                      ContainsSubstring("no stochastic prox"));
  config = small_cluster(ata::ml::Method::sgd);
  config.batch = 0;
  REQUIRE_THROWS_WITH(ata::ml::train(quadratic, config, "ofta"),
                      ContainsSubstring("B must be >= 1"));
  config = small_cluster(ata::ml::Method::sgd);
  config.target_gap = 1.5;
  REQUIRE_THROWS_WITH(ata::ml::train(quadratic, config, "ofta"), ContainsSubstring("target gap"));
  config = small_cluster(ata::ml::Method::sgd);
  REQUIRE_THROWS_WITH(ata::ml::train(quadratic, config, "fastest"),
                      ContainsSubstring("unknown strategy"));
}

TEST_CASE("diverging training stops with a clear error, not nan", "[apps][training][errors]") {
  const ata::ml::LeastSquaresProblem squares(ata::ml::make_regression(100, 5, 4), "synthetic");
  auto config = small_cluster(ata::ml::Method::sgd);
  config.step = 10.0;  // far beyond 2 / the largest curvature
  REQUIRE_THROWS_WITH(ata::ml::train(squares, config, "uta"),
                      ContainsSubstring("uta diverged at round") &&
                          ContainsSubstring("is inf with step size 10") &&
                          ContainsSubstring("lower --step"));
}

namespace {

// The CPUs this process may use.
std::vector<unsigned> usable_cpus() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  REQUIRE(sched_getaffinity(0, sizeof allowed, &allowed) == 0);
  std::vector<unsigned> out;
  for (unsigned cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &allowed)) out.push_back(cpu);
  }
  REQUIRE_FALSE(out.empty());
  return out;
}

unsigned usable_cpu() { return usable_cpus().front(); }

// Two workers without simulated delay, both on one CPU, the second doing each task 8 times.
ata::ml::TrainingConfig machine_speeds(ata::ml::LaneKind lanes) {
  auto config = small_cluster(ata::ml::Method::sgd);
  config.scenario = ata::models::Scenario(
      "none", std::vector<ata::models::TimeModel>(2, ata::models::TimeModel::constant(0.0)));
  config.simulated_delays = false;
  config.lanes = lanes;
  config.cpus = {usable_cpu(), usable_cpu()};
  config.work_factors = {1, 8};
  return config;
}

}  // namespace

TEST_CASE("training runs the same iterates on every lane kind, pinned, with work factors",
          "[apps][training][lanes]") {
  const ata::ml::QuadraticProblem quadratic(200, 1e-3);
  std::vector<double> gaps;
  for (const auto kind :
       {ata::ml::LaneKind::threads, ata::ml::LaneKind::asio, ata::ml::LaneKind::tbb}) {
    auto config = machine_speeds(kind);
    config.means = {1e-5, 8e-5};
    config.policy.alpha = 8e-5;
    for (const auto name : {"ofta", "ata-auto", "gta", "pull"}) {
      INFO(ata::ml::lane_kind_name(kind) << ", " << name);
      const auto run = ata::ml::train(quadratic, config, name);
      CHECK(run.reached);
      CHECK(run.learned_means.size() == 2);
      if (std::string(name) == "ofta") gaps.push_back(run.final_gap);
    }
  }
  REQUIRE(gaps.size() == 3);
  CHECK(gaps[0] == gaps[1]);  // task j of round k draws the same sample on every kind
  CHECK(gaps[0] == gaps[2]);
}

TEST_CASE("calibration measures the work factors on every lane kind", "[apps][training][lanes]") {
  const ata::ml::QuadraticProblem quadratic(2000, 1e-3);
  for (const auto kind :
       {ata::ml::LaneKind::threads, ata::ml::LaneKind::asio, ata::ml::LaneKind::tbb}) {
    INFO(ata::ml::lane_kind_name(kind));
    // 8 times the work; a preempted task can still inflate a mean of 40 on a loaded machine,
    // so up to three fresh calibrations (a factor not applied fails them all).
    std::vector<double> means;
    for (int run = 0; run < 3 && !(means.size() == 2 && means[1] > 2.0 * means[0]); ++run) {
      means = ata::ml::calibrate_means(quadratic, machine_speeds(kind), 40);
      REQUIRE(means.size() == 2);
      CHECK(means[0] > 0.0);
    }
    CHECK(means[1] > 2.0 * means[0]);
  }
}

TEST_CASE("every lane kind runs each worker's tasks on its CPU", "[apps][training][lanes]") {
  // The last usable CPU for worker 0, the first for worker 1: on a machine with two or more,
  // neither is every CPU, so an unpinned thread would be caught.
  const auto cpus = usable_cpus();
  for (const auto kind :
       {ata::ml::LaneKind::threads, ata::ml::LaneKind::asio, ata::ml::LaneKind::tbb}) {
    INFO(ata::ml::lane_kind_name(kind));
    auto config = machine_speeds(kind);
    config.cpus = {cpus.back(), cpus.front()};
    ata::ml::TrainingLanes lanes(config);
    const auto uniform = ata::make_policy("uta", 2);
    ata::runtime::BatchScheduler scheduler(lanes.lanes(), *uniform, ata::testing::without_backups());
    for (int round = 0; round < 5; ++round) {
      const auto [where, report] = scheduler.run(8, [](const ata::runtime::TaskContext& ctx) {
        return std::pair{ctx.worker(), sched_getcpu()};
      });
      for (const auto& [worker, cpu] : where) {
        CHECK(cpu == static_cast<int>(config.cpus[worker]));
      }
    }
    lanes.check_pinned();
  }
}

TEST_CASE("lanes refuse lists of the wrong length and work factors on delays",
          "[apps][training][lanes][errors]") {
  const ata::ml::QuadraticProblem quadratic(4, 1e-3);
  auto config = machine_speeds(ata::ml::LaneKind::asio);
  config.cpus = {usable_cpu(), usable_cpu(), usable_cpu()};
  REQUIRE_THROWS_WITH(ata::ml::train(quadratic, config, "uta"),
                      ContainsSubstring("CPUs: 3 values for 2 workers; give one per worker"));
  config = machine_speeds(ata::ml::LaneKind::tbb);
  config.work_factors = {1};
  REQUIRE_THROWS_WITH(ata::ml::calibrate_means(quadratic, config, 5),
                      ContainsSubstring("work factors: 1 values for 2 workers"));
  config = machine_speeds(ata::ml::LaneKind::threads);
  config.simulated_delays = true;
  REQUIRE_THROWS_WITH(ata::ml::train(quadratic, config, "uta"),
                      ContainsSubstring("work factors need workers without simulated delays"));
  config = machine_speeds(ata::ml::LaneKind::threads);
  config.cpus = {usable_cpu(), 1023};
  REQUIRE_THROWS_WITH(
      ata::ml::train(quadratic, config, "uta"),
      ContainsSubstring("worker 1 is pinned to CPU 1023, which this process may not use"));
  REQUIRE_THROWS_WITH(
      ata::ml::calibrate_means(quadratic, machine_speeds(ata::ml::LaneKind::tbb), 0),
      ContainsSubstring("at least 1 task per worker, got 0"));
}

TEST_CASE("the lanes say what they are", "[apps][training][lanes]") {
  const auto config = machine_speeds(ata::ml::LaneKind::asio);
  const std::string cpu = std::to_string(usable_cpu());
  CHECK(ata::ml::describe_lanes(config) == "2 Asio io_contexts, a thread each, pinned to CPUs " +
                                               cpu + "," + cpu + "; work factors 1,8");
  CHECK(ata::ml::describe_lanes(machine_speeds(ata::ml::LaneKind::tbb))
            .starts_with("2 oneTBB arenas"));
}

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "ata/core/error.hpp"
#include "ata/core/make_policy.hpp"
#include "problems.hpp"
#include "training.hpp"

using Catch::Matchers::ContainsSubstring;

namespace {

ata::ml::TrainingConfig small_cluster(ata::ml::Method method) {
  ata::ml::TrainingConfig config;
  config.method = method;
  config.scenario = ata::sim::make_preset("sqrt", 4);
  config.unit = std::chrono::microseconds(1);
  config.batch = 6;
  config.max_rounds = 3000;
  config.target_gap = 0.05;
  config.step = method == ata::ml::Method::sgd ? 0.5 : 2.0;
  config.policy.alpha = ata::ml::true_means_seconds(config).back();
  return config;
}

}  // namespace

TEST_CASE("SGD and SPPM reach the target under every strategy", "[apps][training]") {
  const ata::ml::LogisticProblem logistic(ata::ml::make_classification(300, 5, 3), 1e-2, "synthetic");
  const ata::ml::LeastSquaresProblem squares(ata::ml::make_regression(300, 5, 4), "synthetic");
  for (const auto method : {ata::ml::Method::sgd, ata::ml::Method::prox}) {
    const auto config = small_cluster(method);
    for (const ata::ml::Problem* problem : {static_cast<const ata::ml::Problem*>(&logistic),
                                            static_cast<const ata::ml::Problem*>(&squares)}) {
      for (const auto name : ata::policy_names()) {
        const auto run = ata::ml::train(*problem, config, name);
        INFO(problem->describe() << ", " << name << (method == ata::ml::Method::sgd ? ", SGD" : ", prox"));
        CHECK(run.reached);
        CHECK(run.final_gap <= 0.05 * (problem->loss(problem->initial_point()) - problem->optimal_loss()));
        CHECK(run.worker_seconds > 0.0);
        CHECK(run.trace.size() == run.rounds);
      }
    }
  }
}

TEST_CASE("allocated strategies follow the same iterates", "[apps][training]") {
  const ata::ml::LogisticProblem logistic(ata::ml::make_classification(200, 4, 5), 1e-2, "synthetic");
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
  with_backups.backups = ata::runtime::Backups::on;
  CHECK(ata::ml::train(logistic, with_backups, "ofta").final_gap == ofta.final_gap);
}

TEST_CASE("training rejects bad settings", "[apps][training][errors]") {
  const ata::ml::QuadraticProblem quadratic(4, 1e-3);
  auto config = small_cluster(ata::ml::Method::prox);
  REQUIRE_THROWS_WITH(ata::ml::train(quadratic, config, "ofta"), ContainsSubstring("no stochastic prox"));
  config = small_cluster(ata::ml::Method::sgd);
  config.batch = 0;
  REQUIRE_THROWS_WITH(ata::ml::train(quadratic, config, "ofta"), ContainsSubstring("B must be >= 1"));
  config = small_cluster(ata::ml::Method::sgd);
  config.target_gap = 1.5;
  REQUIRE_THROWS_WITH(ata::ml::train(quadratic, config, "ofta"), ContainsSubstring("target gap"));
  config = small_cluster(ata::ml::Method::sgd);
  REQUIRE_THROWS_WITH(ata::ml::train(quadratic, config, "fastest"), ContainsSubstring("unknown strategy"));
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

#include "ata/models/time_model.hpp"

#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "ata/core/error.hpp"
#include "ata/core/worker_stats.hpp"

using ata::models::TimeModel;
using Catch::Matchers::ContainsSubstring;

namespace {

struct Case {
  std::string label;
  TimeModel model;
};

}  // namespace

TEST_CASE("each time model's samples match its mean and variance", "[models][time_model]") {
  const std::vector<Case> cases{
      {"constant", TimeModel::constant(3.0)},
      {"exponential", TimeModel::exponential(2.0)},
      {"shifted exponential", TimeModel::shifted_exponential(29.0, 29.0)},
      {"gamma shape 2", TimeModel::gamma(2.0, 1.5)},
      {"gamma shape 0.5", TimeModel::gamma(0.5, 2.0)},
      {"lognormal", TimeModel::lognormal(0.3, 0.5)},
      {"uniform", TimeModel::uniform(1.0, 5.0)},
      {"half-normal", TimeModel::half_normal(2.0)},
      {"pareto", TimeModel::pareto(1.0, 6.0)},
      {"mixture", TimeModel::mixture({0.7, 0.3}, {TimeModel::constant(1.0), TimeModel::exponential(10.0)})},
      {"outage", TimeModel::outage(TimeModel::exponential(1.0), 0.1, 20.0)},
  };
  constexpr int kSamples = 200000;
  for (const auto& c : cases) {
    INFO(c.label << ": " << c.model.describe());
    ata::models::Rng rng(2024, 7);
    ata::WorkerStats stats;  // add() throws on a negative or non-finite draw
    for (int s = 0; s < kSamples; ++s) stats.add(c.model.sample(rng));
    const double standard_error = std::sqrt(c.model.variance() / kSamples);
    CHECK(std::abs(stats.mean() - c.model.mean()) <= 5.0 * standard_error + 1e-12);
    CHECK(stats.variance() == Catch::Approx(c.model.variance()).epsilon(0.05).margin(1e-12));
  }
}

TEST_CASE("closed-form moments of the time models", "[models][time_model]") {
  CHECK(TimeModel::shifted_exponential(29.0, 29.0).mean() == 58.0);
  CHECK(TimeModel::gamma(2.0, 3.0).variance() == 18.0);
  CHECK(TimeModel::uniform(0.0, 6.0).variance() == 3.0);
  CHECK(TimeModel::pareto(1.0, 2.0).mean() == 2.0);
  CHECK(std::isinf(TimeModel::pareto(1.0, 2.0).variance()));
  // Outage: E = base + timeout p/(1-p).
  CHECK(TimeModel::outage(TimeModel::constant(1.0), 0.5, 10.0).mean() == Catch::Approx(11.0));
  const auto scaled = TimeModel::lognormal(0.0, 0.5).scaled(1e-3);
  CHECK(scaled.mean() == Catch::Approx(1e-3 * TimeModel::lognormal(0.0, 0.5).mean()));
  CHECK(TimeModel::mixture({1, 1}, {TimeModel::constant(1), TimeModel::constant(3)}).scaled(2).mean() == Catch::Approx(4.0));
}

TEST_CASE("a seed and stream reproduce the same draws", "[models][time_model]") {
  const auto model = TimeModel::gamma(0.7, 2.0);
  ata::models::Rng a(5, 3);
  ata::models::Rng b(5, 3);
  ata::models::Rng other_stream(5, 4);
  bool differs = false;
  for (int s = 0; s < 100; ++s) {
    const double x = model.sample(a);
    REQUIRE(x == model.sample(b));
    differs |= x != model.sample(other_stream);
  }
  CHECK(differs);
}

TEST_CASE("time models reject bad parameters, naming them", "[models][time_model][errors]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  REQUIRE_THROWS_WITH(TimeModel::constant(-1.0), ContainsSubstring("constant time") && ContainsSubstring("-1"));
  REQUIRE_THROWS_WITH(TimeModel::exponential(0.0), ContainsSubstring("exponential mean"));
  REQUIRE_THROWS_WITH(TimeModel::exponential(nan), ContainsSubstring("nan"));
  REQUIRE_THROWS_WITH(TimeModel::shifted_exponential(-1.0, 1.0), ContainsSubstring("shift"));
  REQUIRE_THROWS_WITH(TimeModel::gamma(0.0, 1.0), ContainsSubstring("gamma shape"));
  REQUIRE_THROWS_WITH(TimeModel::gamma(1.0, -2.0), ContainsSubstring("gamma scale"));
  REQUIRE_THROWS_WITH(TimeModel::lognormal(nan, 1.0), ContainsSubstring("lognormal mu"));
  REQUIRE_THROWS_WITH(TimeModel::lognormal(0.0, -1.0), ContainsSubstring("lognormal sigma"));
  REQUIRE_THROWS_WITH(TimeModel::uniform(3.0, 1.0), ContainsSubstring("low <= high"));
  REQUIRE_THROWS_WITH(TimeModel::half_normal(0.0), ContainsSubstring("half-normal sigma"));
  REQUIRE_THROWS_WITH(TimeModel::pareto(1.0, 1.0), ContainsSubstring("shape must be > 1"));
  REQUIRE_THROWS_WITH(TimeModel::mixture({}, {}), ContainsSubstring("at least one component"));
  REQUIRE_THROWS_WITH(TimeModel::mixture({1.0}, {TimeModel::constant(1), TimeModel::constant(2)}),
                      ContainsSubstring("one weight per component"));
  REQUIRE_THROWS_WITH(TimeModel::mixture({0.0}, {TimeModel::constant(1)}), ContainsSubstring("all be 0"));
  REQUIRE_THROWS_WITH(TimeModel::outage(TimeModel::constant(1), 1.0, 5.0),
                      ContainsSubstring("[0, 0.999]"));
  // Close to 1, sampling would make ~1e9 attempts per task: refused, the value shown exactly.
  REQUIRE_THROWS_WITH(TimeModel::outage(TimeModel::constant(1), 0.999999999, 5.0),
                      ContainsSubstring("got 0.999999999"));
  CHECK(TimeModel::outage(TimeModel::constant(1), TimeModel::kMaxOutageProbability, 1.0).mean() ==
        Catch::Approx(1.0 + 999.0));
  REQUIRE_THROWS_WITH(TimeModel::outage(TimeModel::constant(1), 0.1, 0.0), ContainsSubstring("timeout"));
  REQUIRE_THROWS_WITH(TimeModel::constant(1).scaled(0.0), ContainsSubstring("scale factor"));
}

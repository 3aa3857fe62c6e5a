// ata-auto's plan evaluator (detail::PlanEvaluator): its inputs are checked, and the hedged
// quotas are a candidate exactly when a copy can become overdue.

#include "core/plan_evaluator.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cstddef>
#include <limits>
#include <vector>

#include "ata/core/error.hpp"

using ata::detail::PlanEvaluator;
using Catch::Matchers::ContainsSubstring;

namespace {

struct Inputs {
  std::vector<double> means{1.0, 2.0};
  std::vector<std::size_t> quotas{2, 1};
  std::vector<double> ratios{0.5, 1.0, 1.5};
  std::size_t batch = 3;
  double price = 0.5;
  std::vector<double> rule_means{1.0, 2.0};
};

ata::AtaAutoPolicy::PlanEstimate choose(PlanEvaluator& evaluator, const Inputs& in) {
  return evaluator.choose(in.means, in.quotas, in.ratios, in.batch, in.price,
                          ata::RaceKind::fungible, 0, true, in.rule_means);
}

bool has_hedged(const PlanEvaluator& evaluator) {
  for (const auto& e : evaluator.all()) {
    if (e.hedged) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("plan evaluator refuses bad inputs with clear errors", "[core][plans]") {
  PlanEvaluator evaluator(1);
  const auto refused = [&](const Inputs& in, const char* message) {
    CHECK_THROWS_WITH(choose(evaluator, in), ContainsSubstring(message));
  };
  Inputs in;
  in.means.clear();
  refused(in, "at least one worker");
  in = Inputs{};
  in.means = {2.0, 1.0};
  refused(in, "means ascending");
  in = Inputs{};
  in.means[1] = std::numeric_limits<double>::quiet_NaN();
  refused(in, "planning mean");
  in = Inputs{};
  in.quotas = {3};
  refused(in, "1 quotas for 2 workers");
  in = Inputs{};
  in.quotas = {1, 1};
  refused(in, "quotas summing to the batch B >= 1, got 2 for B = 3");
  in = Inputs{};
  in.ratios.clear();
  refused(in, "ratios with a positive mean");
  in = Inputs{};
  in.ratios[0] = -1.0;
  refused(in, "ratio of the shape");
  in = Inputs{};
  in.price = -0.1;
  refused(in, "work price");
  in = Inputs{};
  in.rule_means = {1.0};
  refused(in, "1 backup rule means for 2 workers");
  in = Inputs{};
  in.rule_means[0] = -1.0;
  refused(in, "backup rule's mean");
  CHECK_NOTHROW(choose(evaluator, Inputs{}));
}

TEST_CASE("plan evaluator tries hedged quotas only when a copy can become overdue",
          "[core][plans]") {
  PlanEvaluator evaluator(1);
  Inputs in;
  // Ratios of mean 1 below the threshold (4): no copy is ever overdue.
  in.ratios = {0.9, 1.0, 1.1};
  (void)choose(evaluator, in);
  CHECK_FALSE(has_hedged(evaluator));
  // One ratio in 100 of about 50 x the mean (the rest about 0.5 of it): copies can pay.
  in.ratios.assign(99, 0.5);
  in.ratios.push_back(50.0);
  (void)choose(evaluator, in);
  CHECK(has_hedged(evaluator));
  // Without rule means (Options::hedge_quotas off) there is no hedged candidate.
  in.rule_means.clear();
  (void)choose(evaluator, in);
  CHECK_FALSE(has_hedged(evaluator));
  // The rule reads a mean 20x the planning mean: a copy would need a ratio of 80.
  in.rule_means = {20.0, 40.0};
  (void)choose(evaluator, in);
  CHECK_FALSE(has_hedged(evaluator));
}

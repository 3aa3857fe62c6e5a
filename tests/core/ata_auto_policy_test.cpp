#include "ata/core/ata_auto_policy.hpp"

#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <vector>

#include "ata/ata.hpp"

using Catch::Approx;
using Catch::Matchers::ContainsSubstring;
using Options = ata::AtaAutoPolicy::Options;

namespace {

std::vector<std::size_t> as_vector(const ata::Allocation& a) { return {a.begin(), a.end()}; }

using Draw = std::function<double(std::size_t worker, std::size_t round, std::mt19937_64&)>;

// Runs `rounds` rounds of `policy` with task times from `draw` and returns every allocation.
std::vector<ata::Allocation> drive(ata::Policy& policy, std::size_t batch, std::size_t rounds,
                                   const Draw& draw, std::uint64_t seed = 12345) {
  std::mt19937_64 rng(seed);
  std::vector<ata::Allocation> played;
  for (std::size_t k = 1; k <= rounds; ++k) {
    played.push_back(policy.allocate(batch));
    const auto& a = played.back();
    for (std::size_t i = 0; i < a.size(); ++i) {
      for (std::size_t t = 0; t < a[i]; ++t) policy.observe(i, draw(i, k, rng));
    }
  }
  return played;
}

const std::vector<double> kMeans{1.0, 1.7, 2.9, 4.3, 7.1};

// Shifted exponential, the paper's law: mean/2 + Exp(mean/2).
double paper_time(double mean, std::mt19937_64& rng) {
  return mean / 2 + std::exponential_distribution<double>(2.0 / mean)(rng);
}

}  // namespace

TEST_CASE("ata-auto tries every unseen worker once, B at a time, lowest index first",
          "[core][policy][ata-auto]") {
  ata::AtaAutoPolicy policy(50, Options{}.set_seed(3));
  CHECK(policy.name() == "ata-auto");
  const auto played = drive(policy, 23, 3, [](std::size_t i, std::size_t, auto&) {
    return 1.0 + 0.1 * static_cast<double>(i);
  });
  for (std::size_t i = 0; i < 50; ++i) {
    INFO("worker " << i);
    CHECK(played[0][i] == (i < 23 ? 1u : 0u));
    CHECK(played[1][i] == (i >= 23 && i < 46 ? 1u : 0u));
    if (i >= 46) CHECK(played[2][i] == 1u);  // the last 4 unseen, plus 19 tasks for seen workers
  }
  CHECK(played[2].total() == 23);
  for (std::size_t i = 0; i < 50; ++i) CHECK(policy.estimated_samples(i) >= 1);

  ata::AtaAutoPolicy few(5);  // B > n in round 1: the spread gives the surplus round robin
  CHECK(as_vector(few.allocate(12)) == std::vector<std::size_t>{3, 3, 2, 2, 2});
}

TEST_CASE("ata-auto's allocations are reproduced by its seed", "[core][policy][ata-auto]") {
  const Draw exponential = [](std::size_t i, std::size_t, std::mt19937_64& rng) {
    return std::exponential_distribution<double>(1.0 / kMeans[i])(rng);
  };
  ata::AtaAutoPolicy a(kMeans.size(), Options{}.set_seed(42));
  ata::AtaAutoPolicy b(kMeans.size(), Options{}.set_seed(42));
  ata::AtaAutoPolicy c(kMeans.size(), Options{}.set_seed(43));
  const auto run_a = drive(a, 10, 400, exponential);
  const auto run_b = drive(b, 10, 400, exponential);
  const auto run_c = drive(c, 10, 400, exponential);
  CHECK(run_a == run_b);
  CHECK(run_a != run_c);

  ata::PolicyOptions options;
  options.seed = 42;
  const auto named = ata::make_policy("ata-auto", kMeans.size(), options);
  CHECK(named->name() == "ata-auto");
  CHECK(drive(*named, 10, 400, exponential) == run_a);
}

TEST_CASE("ata-auto converges to OFTA's allocation on a stable cluster",
          "[core][policy][ata-auto][convergence]") {
  ata::OraclePolicy oracle(kMeans);
  const ata::Allocation target = oracle.allocate(10);
  for (const std::uint64_t seed : {1u, 2u, 3u}) {
    ata::AtaAutoPolicy policy(kMeans.size(), Options{}.set_seed(seed));
    const auto played = drive(policy, 10, 6000, [](std::size_t i, std::size_t, auto& rng) {
      return paper_time(kMeans[i], rng);
    }, seed);
    std::size_t matches = 0;
    for (std::size_t k = played.size() - 1000; k < played.size(); ++k) matches += played[k] == target;
    INFO("seed " << seed);
    CHECK(matches >= 950);
    CHECK(policy.changes_detected() == 0);
    CHECK(policy.pooled_cv() == Approx(0.5).epsilon(0.05));  // the law's cv, learned
    CHECK(policy.estimated_mean(0) == Approx(kMeans[0]).epsilon(0.02));
  }
}

TEST_CASE("ata-auto needs no parameter of the time distributions",
          "[core][policy][ata-auto][convergence]") {
  // The same learner, the same defaults, on times 10^6 times longer and of another shape
  // (gamma, cv 0.71 instead of 0.5): the allocation depends on ratios of means only.
  const std::vector<double> big{1e6, 1.7e6, 2.9e6, 4.3e6, 7.1e6};
  const ata::Allocation target = ata::OraclePolicy(big).allocate(10);
  ata::AtaAutoPolicy policy(big.size(), Options{}.set_seed(5));
  const auto played = drive(policy, 10, 8000, [&](std::size_t i, std::size_t, auto& rng) {
    return std::gamma_distribution<double>(2.0, 0.5 * big[i])(rng);
  });
  std::size_t matches = 0;
  for (std::size_t k = played.size() - 1000; k < played.size(); ++k) matches += played[k] == target;
  CHECK(matches >= 850);
}

TEST_CASE("ata-auto detects a slowdown and moves the tasks away within two rounds",
          "[core][policy][ata-auto][changes]") {
  constexpr std::size_t kChange = 3001;
  ata::AtaAutoPolicy policy(kMeans.size(), Options{}.set_seed(9));
  const auto played = drive(policy, 10, kChange + 20, [](std::size_t i, std::size_t k, auto& rng) {
    const double slowdown = (i == 0 && k >= kChange) ? 10.0 : 1.0;
    return paper_time(slowdown * kMeans[i], rng);
  });
  CHECK(policy.changes_detected() == 1);
  // Before: the fastest worker carries the most tasks. Two rounds after: at most OFTA's share
  // for the new means, and the learner's estimate is the new mean.
  CHECK(played[kChange - 2][0] >= 3);
  std::vector<double> after = kMeans;
  after[0] *= 10.0;
  const auto oracle_after = ata::OraclePolicy(after).allocate(10);
  for (std::size_t k = kChange + 1; k < played.size(); ++k) {
    INFO("round " << k + 1);
    CHECK(played[k][0] <= std::max<std::size_t>(oracle_after[0], 1));
  }
  CHECK(policy.estimated_mean(0) == Approx(10.0 * kMeans[0]).epsilon(0.5));
  CHECK(policy.estimated_samples(0) < 100);
  CHECK(policy.stats(0).count() > 3000);  // the base statistics keep the whole history
}

TEST_CASE("ata-auto's change test ignores heavy tails and outliers",
          "[core][policy][ata-auto][changes]") {
  ata::AtaAutoPolicy policy(kMeans.size(), Options{}.set_seed(11));
  (void)drive(policy, 10, 6000, [](std::size_t i, std::size_t, std::mt19937_64& rng) {
    // Pareto with shape 2.5 (infinite third moment), and 1% outages of 20x the mean.
    const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
    const double pareto = kMeans[i] * 0.6 / std::pow(1.0 - u, 1.0 / 2.5);
    return std::bernoulli_distribution(0.01)(rng) ? pareto + 20.0 * kMeans[i] : pareto;
  });
  CHECK(policy.changes_detected() == 0);
}

TEST_CASE("ata-auto with a change threshold of infinity never restarts a worker",
          "[core][policy][ata-auto][changes]") {
  ata::AtaAutoPolicy policy(2, Options{}.set_change_threshold(std::numeric_limits<double>::infinity()));
  (void)drive(policy, 4, 600, [](std::size_t i, std::size_t k, auto&) {
    return (i == 0 && k > 300) ? 50.0 : 1.0 + static_cast<double>(i);
  });
  CHECK(policy.changes_detected() == 0);
  CHECK(policy.estimated_samples(0) == policy.stats(0).count());
}

TEST_CASE("ata-auto copes with zero and constant durations", "[core][policy][ata-auto]") {
  ata::AtaAutoPolicy policy(3, Options{}.set_seed(1));
  const auto played = drive(policy, 6, 200, [](std::size_t i, std::size_t, auto&) {
    return i == 0 ? 0.0 : static_cast<double>(i);  // worker 0 takes no time at all
  });
  for (const auto& a : played) REQUIRE(a.total() == 6);
  CHECK(played.back()[0] == 6);  // a free worker gets everything (score 0)
  CHECK(std::isfinite(policy.pooled_cv()));
  CHECK(policy.estimated_mean(2) == 2.0);
}

TEST_CASE("ata-auto rejects bad input with a message naming the value",
          "[core][policy][ata-auto][errors]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  REQUIRE_THROWS_WITH(ata::AtaAutoPolicy(0), ContainsSubstring("at least one worker"));
  REQUIRE_THROWS_WITH(ata::AtaAutoPolicy(3, Options{}.set_exploration(0.0)),
                      ContainsSubstring("exploration") && ContainsSubstring("0"));
  REQUIRE_THROWS_WITH(ata::AtaAutoPolicy(3, Options{}.set_exploration(-1.0)), ContainsSubstring("-1"));
  REQUIRE_THROWS_WITH(ata::AtaAutoPolicy(3, Options{}.set_exploration(nan)), ContainsSubstring("exploration"));
  REQUIRE_THROWS_WITH(ata::AtaAutoPolicy(3, Options{}.set_exploration(inf)), ContainsSubstring("inf"));
  REQUIRE_THROWS_WITH(ata::AtaAutoPolicy(3, Options{}.set_change_threshold(0.0)),
                      ContainsSubstring("change_threshold"));
  REQUIRE_THROWS_WITH(ata::AtaAutoPolicy(3, Options{}.set_change_threshold(-2.0)), ContainsSubstring("-2"));
  REQUIRE_THROWS_WITH(ata::AtaAutoPolicy(3, Options{}.set_change_threshold(nan)), ContainsSubstring("nan"));

  ata::AtaAutoPolicy policy(3);
  REQUIRE_THROWS_WITH(policy.allocate(0), ContainsSubstring("B must be >= 1"));
  REQUIRE_THROWS_WITH(policy.observe(3, 1.0), ContainsSubstring("worker index 3"));
  REQUIRE_THROWS_WITH(policy.observe(0, -0.5), ContainsSubstring("-0.5"));
  REQUIRE_THROWS_WITH(policy.observe(0, nan), ContainsSubstring("nan"));
  REQUIRE_THROWS_WITH(policy.observe(0, inf), ContainsSubstring("inf"));
  REQUIRE_THROWS_WITH(policy.estimated_mean(3), ContainsSubstring("worker index 3"));
  REQUIRE_THROWS_WITH(policy.estimated_samples(5), ContainsSubstring("worker index 5"));
  CHECK(policy.estimated_samples(0) == 0);  // refused observations leave no trace
  CHECK(policy.round() == 0);
  REQUIRE_THROWS_WITH(ata::make_policy("ata-auto", 0), ContainsSubstring("at least one worker"));
}

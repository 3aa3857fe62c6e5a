#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "ata/ata.hpp"

using Catch::Approx;
using Catch::Matchers::ContainsSubstring;

namespace {

std::vector<std::size_t> as_vector(const ata::Allocation& a) { return {a.begin(), a.end()}; }

// Runs `rounds` rounds of `policy`, each task's time drawn by `draw(worker, rng)`, and returns
// the share of the last `tail` rounds whose allocation equals `target`.
double share_matching(ata::Policy& policy, std::size_t batch, std::size_t rounds, std::size_t tail,
                      const ata::Allocation& target,
                      const std::function<double(std::size_t, std::mt19937_64&)>& draw) {
  std::mt19937_64 rng(12345);
  std::size_t matches = 0;
  ata::Allocation a;
  for (std::size_t k = 0; k < rounds; ++k) {
    policy.allocate(batch, a);
    if (k >= rounds - tail && a == target) ++matches;
    for (std::size_t i = 0; i < a.size(); ++i) {
      for (std::size_t t = 0; t < a[i]; ++t) policy.observe(i, draw(i, rng));
    }
  }
  return static_cast<double>(matches) / static_cast<double>(tail);
}

const std::vector<double> kMeans{1.0, 1.7, 2.9, 4.3, 7.1};
constexpr std::size_t kBatch = 10;

}  // namespace

TEST_CASE("unseen workers are tried first, spread round robin", "[core][policy]") {
  ata::AtaPolicy ata(4, 1.0);
  CHECK(ata.round() == 0);
  CHECK(as_vector(ata.allocate(2)) == std::vector<std::size_t>{1, 1, 0, 0});
  CHECK(ata.round() == 1);
  ata.observe(0, 1.0);
  ata.observe(1, 1.0);
  // Workers 2 and 3 are unseen (score 0); workers 0 and 1 score 0 too (1 sample, wide bound).
  CHECK(as_vector(ata.allocate(2)) == std::vector<std::size_t>{0, 0, 1, 1});
  for (double s : ata.scores()) CHECK(s == 0.0);
}

TEST_CASE("policy scores are the confidence bounds of the observed samples", "[core][policy]") {
  ata::AtaPolicy ata(3, 0.5);
  ata::AtaEmpiricalPolicy empirical(3, 0.25);
  const std::vector<std::vector<double>> samples{{2.0, 4.0, 3.0}, {10.0}, {}};
  for (std::size_t i = 0; i < samples.size(); ++i) {
    for (double x : samples[i]) {
      ata.observe(i, x);
      empirical.observe(i, x);
    }
  }
  for (int k = 1; k <= 3; ++k) {
    (void)ata.allocate(4);
    (void)empirical.allocate(4);
  }
  for (std::size_t i = 0; i < 3; ++i) {
    const auto& s = ata.stats(i);
    CHECK(ata.scores()[i] == Approx(ata::ata_lower_bound(s.mean(), s.count(), 3, 0.5)));
    CHECK(empirical.scores()[i] ==
          Approx(ata::ata_empirical_lower_bound(s.mean(), s.count(), 3, 0.25)));
  }
}

TEST_CASE("OFTA plays the min-max allocation of the true means", "[core][policy]") {
  ata::OraclePolicy oracle(std::vector<double>{1.0, 2.0, 4.0});
  CHECK(as_vector(oracle.allocate(7)) == std::vector<std::size_t>{4, 2, 1});
  CHECK(as_vector(oracle.allocate(1)) == std::vector<std::size_t>{1, 0, 0});
  CHECK(as_vector(oracle.allocate(7)) == std::vector<std::size_t>{4, 2, 1});
  CHECK(oracle.round() == 3);
}

TEST_CASE("OFTA plays the optimal allocation of new means after set_means", "[core][policy]") {
  ata::OraclePolicy oracle(std::vector<double>{1.0, 2.0, 4.0});
  CHECK(as_vector(oracle.allocate(7)) == std::vector<std::size_t>{4, 2, 1});
  oracle.set_means({10.0, 2.0, 4.0});  // worker 0 became ten times slower
  CHECK(as_vector(oracle.allocate(7)) == std::vector<std::size_t>{1, 4, 2});  // loss 10, was 4
  CHECK(oracle.means()[0] == 10.0);
  REQUIRE_THROWS_WITH(oracle.set_means({1.0, 2.0}), ContainsSubstring("2 means for 3 workers"));
  REQUIRE_THROWS_WITH(oracle.set_means({1.0, -2.0, 4.0}), ContainsSubstring("worker 1"));
  CHECK(as_vector(oracle.allocate(7)) == std::vector<std::size_t>{1, 4, 2});  // unchanged
}

TEST_CASE("UTA spreads every round continuing where it stopped", "[core][policy]") {
  ata::UniformPolicy uniform(4);
  CHECK(as_vector(uniform.allocate(6)) == std::vector<std::size_t>{2, 2, 1, 1});
  CHECK(as_vector(uniform.allocate(3)) == std::vector<std::size_t>{1, 0, 1, 1});
  CHECK(as_vector(uniform.allocate(1)) == std::vector<std::size_t>{0, 1, 0, 0});
}

TEST_CASE("ATA converges to OFTA's allocation on bounded times", "[core][policy][convergence]") {
  // Uniform on [mu - 0.1, mu + 0.1]: |X - mu| <= 0.1, so ||X - mu||_psi1 <= 0.1 / ln 2 < 0.15.
  ata::OraclePolicy oracle(kMeans);
  const ata::Allocation target = oracle.allocate(kBatch);
  ata::AtaPolicy ata(kMeans.size(), 0.15);
  const double share = share_matching(ata, kBatch, 3000, 500, target, [](std::size_t i, auto& rng) {
    return std::uniform_real_distribution<double>(kMeans[i] - 0.1, kMeans[i] + 0.1)(rng);
  });
  CHECK(share >= 0.95);
}

TEST_CASE("ATA and ATA-Empirical converge to OFTA's allocation on exponential times",
          "[core][policy][convergence]") {
  ata::OraclePolicy oracle(kMeans);
  const ata::Allocation target = oracle.allocate(kBatch);
  const auto exponential = [](std::size_t i, std::mt19937_64& rng) {
    return std::exponential_distribution<double>(1.0 / kMeans[i])(rng);
  };
  ata::AtaEmpiricalPolicy empirical(kMeans.size(), 1.0);
  CHECK(share_matching(empirical, kBatch, 20000, 1000, target, exponential) >= 0.9);
  ata::AtaPolicy ata(kMeans.size(), kMeans.back());  // alpha = max mu, as in the paper
  CHECK(share_matching(ata, kBatch, 20000, 1000, target, exponential) >= 0.9);
}

TEST_CASE("dynamic policies have no allocation but record what they observe", "[core][policy]") {
  ata::DynamicPolicy gta(3, ata::Dispatch::greedy);
  CHECK(gta.name() == "gta");
  CHECK(gta.dispatch() == ata::Dispatch::greedy);
  CHECK(gta.plan(2) == ata::Plan::race(3, ata::RaceKind::fungible));
  REQUIRE_THROWS_WITH(gta.allocate(2), ContainsSubstring("gta") && ContainsSubstring("dynamically"));
  CHECK(gta.round() == 1);  // the refused allocate() did not start a round
  gta.observe(2, 0.5);
  CHECK(gta.stats(2).count() == 1);
  ata::DynamicPolicy pull(3, ata::Dispatch::pull);
  CHECK(pull.name() == "pull");
  CHECK(pull.plan(2) == ata::Plan::race(3, ata::RaceKind::indexed));
  REQUIRE_THROWS_AS(ata::DynamicPolicy(3, ata::Dispatch::allocated), ata::InvalidArgument);
  REQUIRE_THROWS_AS(ata::DynamicPolicy(3, ata::Dispatch::mixed), ata::InvalidArgument);
}

TEST_CASE("make_policy builds every named strategy", "[core][policy]") {
  ata::PolicyOptions options;
  options.alpha = 2.0;
  options.means = {1.0, 2.0};
  for (const auto name : ata::policy_names()) {
    const auto policy = ata::make_policy(name, 2, options);
    CHECK(policy->name() == name);
    CHECK(policy->workers() == 2);
  }
}

TEST_CASE("policies reject bad input with a message naming the value", "[core][policy][errors]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  REQUIRE_THROWS_WITH(ata::AtaPolicy(0, 1.0), ContainsSubstring("at least one worker"));
  REQUIRE_THROWS_WITH(ata::AtaPolicy(3, 0.0), ContainsSubstring("alpha") && ContainsSubstring("0"));
  REQUIRE_THROWS_WITH(ata::AtaPolicy(3, nan), ContainsSubstring("alpha"));
  REQUIRE_THROWS_WITH(ata::AtaEmpiricalPolicy(3, -1.0), ContainsSubstring("eta") && ContainsSubstring("-1"));
  REQUIRE_THROWS_WITH(ata::OraclePolicy({}), ContainsSubstring("at least one worker"));
  REQUIRE_THROWS_WITH(ata::OraclePolicy({1.0, 0.0}), ContainsSubstring("worker 1"));
  REQUIRE_THROWS_WITH(ata::UniformPolicy(0), ContainsSubstring("at least one worker"));

  ata::AtaPolicy ata(3, 1.0);
  REQUIRE_THROWS_WITH(ata.allocate(0), ContainsSubstring("B must be >= 1"));
  REQUIRE_THROWS_WITH(ata.observe(3, 1.0), ContainsSubstring("worker index 3"));
  REQUIRE_THROWS_WITH(ata.observe(0, -0.5), ContainsSubstring("-0.5"));
  REQUIRE_THROWS_WITH(ata.observe(0, nan), ContainsSubstring("nan"));
  REQUIRE_THROWS_WITH(ata.observe(0, std::numeric_limits<double>::infinity()), ContainsSubstring("inf"));
  REQUIRE_THROWS_AS(ata.stats(7), ata::InvalidArgument);
  CHECK(ata.round() == 0);  // a refused allocate() does not start a round

  REQUIRE_THROWS_WITH(ata::make_policy("fastest", 3), ContainsSubstring("unknown strategy 'fastest'") &&
                                                         ContainsSubstring("ata-e"));
  REQUIRE_THROWS_WITH(ata::make_policy("ata", 3), ContainsSubstring("alpha"));
  REQUIRE_THROWS_WITH(ata::make_policy("ofta", 3), ContainsSubstring("3 workers"));
  REQUIRE_THROWS_WITH(ata::make_policy("uta", 0), ContainsSubstring("at least one worker"));
}

TEST_CASE("load-aware allocation steers a batch away from a backlog", "[core][policy]") {
  // OFTA with equal means: 6 tasks, worker 0 still has 4 to finish.
  ata::OraclePolicy oracle(std::vector<double>{2.0, 2.0, 2.0});
  ata::Allocation a;
  oracle.allocate(6, std::vector<double>{4.0, 0.0, 0.0}, a);
  CHECK(as_vector(a) == std::vector<std::size_t>{0, 3, 3});
  // The backlog does not stick: the next plain round is the usual optimum.
  oracle.allocate(6, a);
  CHECK(as_vector(a) == std::vector<std::size_t>{2, 2, 2});
  CHECK(oracle.round() == 2);

  // ATA-Empirical learns means 1 and 3; a backlog of 5 tasks on the fast worker evens them.
  ata::AtaEmpiricalPolicy learner(2, 1.0);
  for (int k = 0; k < 200; ++k) {
    learner.observe(0, 1.0);
    learner.observe(1, 3.0);
  }
  ata::Allocation plain;
  learner.allocate(4, plain);
  learner.allocate(4, std::vector<double>{5.0, 0.0}, a);
  CHECK(as_vector(plain) == std::vector<std::size_t>{3, 1});
  CHECK(as_vector(a) == std::vector<std::size_t>{2, 2});
}

TEST_CASE("an all-zero backlog changes nothing", "[core][policy]") {
  for (const char* name : {"ata", "ata-e", "ata-auto", "uta"}) {
    ata::PolicyOptions options;
    options.alpha = 3.0;
    auto with = ata::make_policy(name, 5, options);
    auto without = ata::make_policy(name, 5, options);
    std::mt19937_64 rng(3);
    std::exponential_distribution<double> exp(1.0);
    ata::Allocation a;
    ata::Allocation b;
    const std::vector<double> idle(5, 0.0);
    for (int k = 0; k < 50; ++k) {
      with->allocate(7, idle, a);
      without->allocate(7, b);
      INFO(name << " round " << k);
      REQUIRE(a == b);
      for (std::size_t i = 0; i < 5; ++i) {
        for (std::size_t t = 0; t < a[i]; ++t) {
          const double x = exp(rng) * static_cast<double>(i + 1);
          with->observe(i, x);
          without->observe(i, x);
        }
      }
    }
  }
}

TEST_CASE("a bad backlog is refused and changes nothing", "[core][policy][errors]") {
  ata::OraclePolicy oracle(std::vector<double>{1.0, 2.0});
  ata::Allocation a;
  REQUIRE_THROWS_WITH(oracle.allocate(3, std::vector<double>{1.0}, a),
                      ContainsSubstring("one entry per worker (2), got 1"));
  REQUIRE_THROWS_WITH(oracle.allocate(3, std::vector<double>{1.0, -1.0}, a),
                      ContainsSubstring("backlog of worker 1"));
  const double inf = std::numeric_limits<double>::infinity();
  REQUIRE_THROWS_WITH(oracle.allocate(3, std::vector<double>{inf, 0.0}, a),
                      ContainsSubstring("backlog of worker 0"));
  CHECK(oracle.round() == 0);
}

TEST_CASE("ata-auto allocates around a backlog", "[core][policy][ata-auto]") {
  auto policy = ata::make_policy("ata-auto", 2);
  std::mt19937_64 rng(9);
  std::exponential_distribution<double> exp(1.0);
  ata::Allocation a;
  for (int k = 0; k < 300; ++k) {  // two workers of mean 1
    policy->allocate(8, a);
    for (std::size_t i = 0; i < 2; ++i) {
      for (std::size_t t = 0; t < a[i]; ++t) policy->observe(i, exp(rng));
    }
  }
  policy->allocate(8, a);
  const std::size_t balanced = a[0];
  policy->allocate(8, std::vector<double>{20.0, 0.0}, a);
  CHECK(a.total() == 8);
  CHECK(a[0] < balanced);
  CHECK(a[1] >= 7);  // worker 0 owes 20 tasks: nearly everything goes to worker 1
}

TEST_CASE("a policy fed summaries learns what it learns from every sample", "[core][policy]") {
  // Two identical policies see the same times over 30 rounds: one sample by sample, the other
  // one summary per worker per round. Statistics and allocations must agree.
  for (const std::string name : {"ata", "ata-e", "uta", "gta", "pull"}) {
    CAPTURE(name);
    constexpr std::size_t kWorkers = 3;
    constexpr std::size_t kBatch = 12;
    ata::PolicyOptions options;
    options.alpha = 1.0;
    auto by_sample = ata::make_policy(name, kWorkers, options);
    auto by_summary = ata::make_policy(name, kWorkers, options);
    REQUIRE_FALSE(by_summary->needs_every_sample());
    std::mt19937_64 rng(5);
    std::exponential_distribution<double> time(1.0);
    for (int round = 0; round < 30; ++round) {
      ata::Allocation a(kWorkers);
      const ata::Plan plan = by_sample->plan(kBatch);
      REQUIRE(by_summary->plan(kBatch) == plan);
      if (plan.dispatch() == ata::Dispatch::allocated) {
        a = plan.quotas();
      } else {
        a = ata::Allocation({4, 4, 4});
      }
      for (std::size_t i = 0; i < kWorkers; ++i) {
        ata::WorkerStats chunk;
        for (std::size_t t = 0; t < a[i]; ++t) {
          const double seconds = (1.0 + static_cast<double>(i)) * time(rng);
          by_sample->observe(i, seconds);
          chunk.add(seconds);
        }
        by_summary->observe_summary(i, chunk);
      }
    }
    for (std::size_t i = 0; i < kWorkers; ++i) {
      CHECK(by_summary->stats(i).count() == by_sample->stats(i).count());
      CHECK(by_summary->stats(i).mean() == Approx(by_sample->stats(i).mean()).epsilon(1e-12));
      CHECK(by_summary->stats(i).variance() ==
            Approx(by_sample->stats(i).variance()).epsilon(1e-12));
    }
  }
}

TEST_CASE("ATA-Auto needs every sample and refuses a summary", "[core][policy][errors]") {
  ata::AtaAutoPolicy policy(2);
  CHECK(policy.needs_every_sample());
  ata::WorkerStats chunk;
  chunk.add(1.0);
  REQUIRE_THROWS_WITH(policy.observe_summary(0, chunk),
                      ContainsSubstring("'ata-auto'") && ContainsSubstring("every task"));
  CHECK(policy.stats(0).count() == 0);
  ata::UniformPolicy uniform(2);
  REQUIRE_THROWS_WITH(uniform.observe_summary(2, chunk), ContainsSubstring("worker index 2"));
  uniform.observe_summary(1, ata::WorkerStats{});  // empty: nothing to learn
  CHECK(uniform.stats(1).count() == 0);
}

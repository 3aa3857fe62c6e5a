// Censored observations (Policy::observe_censored): a task stopped after t seconds because a
// backup copy finished first or a race ended.
#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "ata/ata.hpp"

using Catch::Approx;
using Catch::Matchers::ContainsSubstring;

namespace {
std::vector<std::size_t> as_vector(const ata::Allocation& a) { return {a.begin(), a.end()}; }
}  // namespace

TEST_CASE("censored observations are counted apart from the finished ones", "[core][policy]") {
  ata::UniformPolicy policy(2);
  policy.observe(0, 1.0);
  policy.observe(0, 3.0);
  policy.observe_censored(0, 10.0);
  policy.observe_censored(0, 4.0);
  const ata::WorkerStats& s = policy.stats(0);
  CHECK(s.count() == 2);
  CHECK(s.mean() == 2.0);
  CHECK(s.sum() == 4.0);
  CHECK(s.censored_count() == 2);
  CHECK(s.censored_sum() == 14.0);
  CHECK(policy.stats(1).censored_count() == 0);
}

TEST_CASE("censored observations are validated like observe()", "[core][policy][errors]") {
  ata::UniformPolicy policy(2);
  CHECK_THROWS_WITH(policy.observe_censored(2, 1.0), ContainsSubstring("2"));
  CHECK_THROWS_AS(policy.observe_censored(0, -1.0), ata::InvalidArgument);
  CHECK_THROWS_AS(policy.observe_censored(0, std::numeric_limits<double>::quiet_NaN()),
                  ata::InvalidArgument);
  CHECK_THROWS_WITH(policy.observe_censored(0, std::numeric_limits<double>::infinity()),
                    ContainsSubstring("censored duration"));
  CHECK(policy.stats(0).censored_count() == 0);
}

TEST_CASE("ata-auto counts a censored time as time on test beyond the worker's shift",
          "[core][ata-auto]") {
  ata::AtaAutoPolicy policy(3);
  policy.observe(0, 1.0);
  policy.observe(0, 3.0);
  CHECK(policy.estimated_mean(0) == 2.0);
  policy.observe_censored(0, 4.0);  // shift 1 (the smallest time): 1 + (0 + 2 + 3) / 2
  CHECK(policy.estimated_mean(0) == 3.5);
  CHECK(policy.estimated_samples(0) == 2);
  policy.observe_censored(0, 0.5);  // stopped before the shift: it says nothing
  CHECK(policy.estimated_mean(0) == 3.5);
  // An unseen worker stays unseen; its censored time counts from its first finished one.
  policy.observe_censored(1, 6.0);
  CHECK(policy.estimated_mean(1) == 0.0);
  CHECK(policy.estimated_samples(1) == 0);
  policy.observe(1, 2.0);
  CHECK(policy.estimated_mean(1) == 6.0);  // 2 + (6 - 2) / 1
}

namespace {

// Feeds `policy` what a fungible race of every worker produces over `rounds` rounds of `batch`
// results: each worker computes back to back from 0; at the batch-th result the round ends and
// the copies still running are stopped, their elapsed times censored. Worker i's time is
// shifts[i] plus an exponential of mean means[i] - shifts[i].
void race_into(ata::Policy& policy, const std::vector<double>& shifts,
               const std::vector<double>& means, std::size_t batch, std::size_t rounds) {
  std::mt19937_64 rng(12345);
  const std::size_t n = means.size();
  std::vector<double> start(n);
  std::vector<double> end(n);
  const auto draw = [&](std::size_t i) {
    return shifts[i] + std::exponential_distribution<double>(1.0 / (means[i] - shifts[i]))(rng);
  };
  for (std::size_t r = 0; r < rounds; ++r) {
    for (std::size_t i = 0; i < n; ++i) {
      start[i] = 0.0;
      end[i] = draw(i);
    }
    double now = 0.0;
    for (std::size_t results = 0; results < batch; ++results) {
      const auto i = static_cast<std::size_t>(std::min_element(end.begin(), end.end()) - end.begin());
      now = end[i];
      policy.observe(i, now - start[i]);
      start[i] = now;
      end[i] = now + draw(i);
    }
    for (std::size_t i = 0; i < n; ++i) {
      if (now > start[i]) policy.observe_censored(i, now - start[i]);
    }
  }
}

// Checks ata-auto's mean of each worker against the true one within 4 standard errors of the
// maximum-likelihood estimate, (mean - shift) / sqrt(finished times), and that the plain mean
// of the finished times (which ignores the censored ones) misses the slowest worker's by more.
void check_unbiased(const std::vector<double>& shifts, const std::vector<double>& means) {
  ata::AtaAutoPolicy policy(means.size());
  race_into(policy, shifts, means, /*batch=*/6, /*rounds=*/4000);
  for (std::size_t i = 0; i < means.size(); ++i) {
    const auto finished = static_cast<double>(policy.estimated_samples(i));
    REQUIRE(finished >= 100.0);
    REQUIRE(policy.stats(i).censored_count() > 0);
    const double tolerance = 4.0 * (means[i] - shifts[i]) / std::sqrt(finished);
    INFO("worker " << i << ": " << finished << " finished times, true mean " << means[i]);
    CHECK(std::abs(policy.estimated_mean(i) - means[i]) <= tolerance);
    if (i + 1 == means.size()) {  // the slowest: its long times are the ones stopped
      CHECK(std::abs(policy.stats(i).mean() - means[i]) > tolerance);
    }
  }
}

}  // namespace

TEST_CASE("ata-auto's means stay unbiased under a race's censoring: exponential times",
          "[core][ata-auto]") {
  check_unbiased({0.0, 0.0, 0.0, 0.0}, {1.0, 2.0, 3.0, 4.0});
}

TEST_CASE("ata-auto's means stay unbiased under a race's censoring: shifted exponential times",
          "[core][ata-auto]") {
  // The paper's law: shift = the exponential part's mean (cifar: 29 i + Exp(29 i)).
  check_unbiased({1.0, 2.0, 3.0, 4.0}, {2.0, 4.0, 6.0, 8.0});
}

TEST_CASE("ata-auto gives fewer tasks to a worker whose tasks get stopped", "[core][ata-auto]") {
  // Two workers with the same finished times; worker 1's stopped copies say it is slower.
  const auto play = [](bool censor) {
    ata::AtaAutoPolicy policy(2, ata::AtaAutoPolicy::Options{}.set_seed(3));
    std::size_t to_1 = 0;
    for (int round = 0; round < 200; ++round) {
      const ata::Allocation a = policy.allocate(8);
      for (std::size_t i = 0; i < 2; ++i) {
        for (std::size_t t = 0; t < a[i]; ++t) {
          policy.observe(i, 1.0);
          if (censor && i == 1) policy.observe_censored(1, 2.0);
        }
      }
      to_1 += a[1];
    }
    return to_1;
  };
  // Plain: equal means, 4 tasks each per round. Censored: worker 1's mean is 3 (1 + 2 stopped),
  // so the best split of 8 tasks is 6 + 2.
  const std::size_t plain = play(false);
  const std::size_t censored = play(true);
  CHECK(plain > 700);
  CHECK(censored < 450);
}

TEST_CASE("ATA and ATA-Empirical ignore censored observations", "[core][policy]") {
  ata::AtaPolicy ata_plain(3, 4.0);
  ata::AtaPolicy ata_censored(3, 4.0);
  ata::AtaEmpiricalPolicy e_plain(3, 1.0);
  ata::AtaEmpiricalPolicy e_censored(3, 1.0);
  for (int round = 0; round < 30; ++round) {
    const auto a = as_vector(ata_plain.allocate(6));
    REQUIRE(a == as_vector(ata_censored.allocate(6)));
    const auto e = as_vector(e_plain.allocate(6));
    REQUIRE(e == as_vector(e_censored.allocate(6)));
    for (std::size_t i = 0; i < 3; ++i) {
      const double t = 1.0 + static_cast<double>(i);
      for (std::size_t k = 0; k < a[i]; ++k) {
        ata_plain.observe(i, t);
        ata_censored.observe(i, t);
        ata_censored.observe_censored(i, 10.0 * t);
      }
      for (std::size_t k = 0; k < e[i]; ++k) {
        e_plain.observe(i, t);
        e_censored.observe(i, t);
        e_censored.observe_censored(i, 10.0 * t);
      }
    }
  }
}

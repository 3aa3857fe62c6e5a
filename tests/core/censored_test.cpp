// Censored observations (Policy::observe_censored): a task stopped after t seconds because a
// backup copy finished first.
#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <limits>
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

TEST_CASE("ata-auto counts a censored time as time on test of the worker", "[core][ata-auto]") {
  ata::AtaAutoPolicy policy(3);
  policy.observe(0, 1.0);
  policy.observe(0, 3.0);
  CHECK(policy.estimated_mean(0) == 2.0);
  policy.observe_censored(0, 4.0);  // (1 + 3 + 4) / 2 finished times
  CHECK(policy.estimated_mean(0) == 4.0);
  CHECK(policy.estimated_samples(0) == 2);
  // An unseen worker stays unseen; its censored time counts from its first finished one.
  policy.observe_censored(1, 6.0);
  CHECK(policy.estimated_mean(1) == 0.0);
  CHECK(policy.estimated_samples(1) == 0);
  policy.observe(1, 2.0);
  CHECK(policy.estimated_mean(1) == 8.0);
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

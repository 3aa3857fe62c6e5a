// Ringmaster's worker selection: the time bound, its minimiser, and the learned selection.
#include "ata/core/ringmaster_selection.hpp"

#include <algorithm>
#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>
#include <limits>
#include <optional>
#include <random>
#include <vector>

#include "ata/core/error.hpp"

using Catch::Approx;
using Catch::Matchers::ContainsSubstring;
using Outcome = ata::RingmasterSelection::Outcome;

namespace {

// The bound of an arbitrary set of workers: (R + |S|) / sum_{i in S} 1/tau_i.
double bound_of(const std::vector<double>& means, const std::vector<std::size_t>& set, std::size_t r) {
  double rate = 0.0;
  for (const std::size_t i : set) rate += 1.0 / means[i];
  return static_cast<double>(r + set.size()) / rate;
}

std::vector<std::size_t> as_vector(std::span<const std::size_t> s) { return {s.begin(), s.end()}; }

}  // namespace

TEST_CASE("Ringmaster's bound by hand", "[core][ringmaster]") {
  const std::vector<double> means{1.0, 2.0, 10.0};
  CHECK(ata::ringmaster_time_bound(means, 1, 2) == Approx(3.0));        // (2 + 1) / 1
  CHECK(ata::ringmaster_time_bound(means, 2, 2) == Approx(4.0 / 1.5));  // (2 + 2) / (1 + 1/2)
  CHECK(ata::ringmaster_time_bound(means, 3, 2) == Approx(5.0 / 1.6));
  // t(2) < t(3): worker 2's mean 10 is above t(2) = 2.67, so it does not help.
  CHECK(ata::ringmaster_fastest(means, 2) == std::vector<std::size_t>{0, 1});
  // A large R wants every worker: t(3) = 103 / 1.6 < t(2) = 104 / 1.5.
  CHECK(ata::ringmaster_fastest(means, 100) == std::vector<std::size_t>{0, 1, 2});
  // t(3) = 3.125 is 1.17 x t(2) = 2.67: a slack of 20 % takes worker 2, one of 15 % does not.
  CHECK(ata::ringmaster_fastest(means, 2, 0.2) == std::vector<std::size_t>{0, 1, 2});
  CHECK(ata::ringmaster_fastest(means, 2, 0.15) == std::vector<std::size_t>{0, 1});
}

TEST_CASE("Ringmaster's selection is the best of every subset, found by brute force",
          "[core][ringmaster]") {
  std::mt19937_64 rng(2025);
  std::lognormal_distribution<double> law(0.0, 1.5);
  for (int trial = 0; trial < 200; ++trial) {
    const std::size_t n = 1 + static_cast<std::size_t>(trial % 8);
    const std::size_t r = 1 + static_cast<std::size_t>(rng() % 40);
    std::vector<double> means(n);
    for (auto& m : means) m = law(rng);
    double best = std::numeric_limits<double>::infinity();
    for (std::size_t mask = 1; mask < (std::size_t{1} << n); ++mask) {
      std::vector<std::size_t> set;
      for (std::size_t i = 0; i < n; ++i) {
        if ((mask >> i) & 1U) set.push_back(i);
      }
      best = std::min(best, bound_of(means, set, r));
    }
    const auto chosen = ata::ringmaster_fastest(means, r);
    CHECK(bound_of(means, chosen, r) == Approx(best).epsilon(1e-12));
    // And the smallest minimiser over m, the prefixes of the sorted means.
    std::vector<double> sorted = means;
    std::sort(sorted.begin(), sorted.end());
    std::size_t m_best = 1;
    for (std::size_t m = 2; m <= n; ++m) {
      if (ata::ringmaster_time_bound(sorted, m, r) < ata::ringmaster_time_bound(sorted, m_best, r)) m_best = m;
    }
    CHECK(chosen.size() == m_best);
    // With a slack, the most prefixes within it of the least bound.
    const double slack = 0.05;
    std::size_t m_slack = 1;
    for (std::size_t m = 1; m <= n; ++m) {
      if (ata::ringmaster_time_bound(sorted, m, r) <= (1.0 + slack) * best) m_slack = m;
    }
    CHECK(ata::ringmaster_fastest(means, r, slack).size() == m_slack);
  }
}

TEST_CASE("Ringmaster's selection refuses bad inputs by name", "[core][ringmaster][errors]") {
  const std::vector<double> means{1.0, 2.0};
  CHECK_THROWS_WITH(ata::ringmaster_fastest(means, 0), ContainsSubstring("threshold R"));
  CHECK_THROWS_WITH(ata::ringmaster_fastest({}, 3), ContainsSubstring("at least one worker"));
  const std::vector<double> bad{1.0, std::numeric_limits<double>::quiet_NaN()};
  CHECK_THROWS_WITH(ata::ringmaster_fastest(bad, 3), ContainsSubstring("mean task time"));
  const std::vector<double> zero{1.0, 0.0};
  CHECK_THROWS_AS(ata::ringmaster_fastest(zero, 3), ata::InvalidArgument);
  CHECK_THROWS_WITH(ata::ringmaster_fastest(means, 3, -0.1), ContainsSubstring("bound slack"));
  CHECK_THROWS_WITH(ata::ringmaster_fastest(means, 3, std::numeric_limits<double>::infinity()),
                    ContainsSubstring("bound slack"));
  CHECK_THROWS_WITH(ata::RingmasterSelection(2, 3, ata::RingmasterSelection::Options{}.set_bound_slack(
                                                       std::numeric_limits<double>::quiet_NaN())),
                    ContainsSubstring("bound slack"));
  CHECK_THROWS_WITH(ata::ringmaster_time_bound(means, 0, 3), ContainsSubstring("m = 0"));
  CHECK_THROWS_WITH(ata::ringmaster_time_bound(means, 3, 3), ContainsSubstring("m = 3"));
  CHECK_THROWS_WITH(ata::RingmasterSelection(0, 3), ContainsSubstring("at least one worker"));
  CHECK_THROWS_WITH(ata::RingmasterSelection(2, 0), ContainsSubstring("threshold R"));
  CHECK_THROWS_WITH(ata::RingmasterSelection(2, 3, ata::RingmasterSelection::Options{}.set_exploration_budget(1.0)),
                    ContainsSubstring("exploration budget"));
  CHECK_THROWS_WITH(ata::RingmasterSelection(2, 3, ata::RingmasterSelection::Options{}.set_censored_alarm(
                                                       std::numeric_limits<double>::quiet_NaN())),
                    ContainsSubstring("censored-time alarm"));
  ata::RingmasterSelection selection(2, 3);
  CHECK_THROWS_WITH(selection.observe(2, 1.0, Outcome::complete), ContainsSubstring("out of range"));
  CHECK_THROWS_AS(selection.observe(0, std::numeric_limits<double>::quiet_NaN(), Outcome::complete),
                  ata::InvalidArgument);
  CHECK_THROWS_AS(selection.observe(0, -1.0, Outcome::censored), ata::InvalidArgument);
  CHECK_THROWS_WITH(selection.observe(0, std::numeric_limits<double>::infinity(), Outcome::censored),
                    ContainsSubstring("censored duration"));
  CHECK_THROWS_WITH(ata::RingmasterSelection(2, 3, ata::RingmasterSelection::Options{}.set_censored_evidence(0.0)),
                    ContainsSubstring("censored-time evidence"));
  CHECK_THROWS_AS(selection.estimated_mean(2), ata::InvalidArgument);
  CHECK(selection.estimated_mean(0) == 0.0);  // nothing was recorded
}

TEST_CASE("the learned selection tries every worker, then keeps the fastest by the bound",
          "[core][ringmaster]") {
  // Four workers of mean 1, twelve of mean 50, R = 8: t(4) = 12 / 4 = 3 < 50, so the four.
  const std::size_t n = 16;
  ata::RingmasterSelection selection(n, 8, ata::RingmasterSelection::Options{}.set_exploration_budget(0.0));
  CHECK(selection.select().size() == n);  // nothing known: everyone runs
  std::mt19937_64 rng(7);
  for (int k = 0; k < 200; ++k) {
    for (std::size_t i = 0; i < n; ++i) {
      const double mean = i < 4 ? 1.0 : 50.0;
      selection.observe(i, std::exponential_distribution<double>(1.0 / mean)(rng), Outcome::complete);
    }
  }
  CHECK(as_vector(selection.select()) == std::vector<std::size_t>{0, 1, 2, 3});
  std::vector<double> truth(n, 50.0);
  std::fill(truth.begin(), truth.begin() + 4, 1.0);
  CHECK(as_vector(selection.select()) == ata::ringmaster_fastest(truth, 8));
  CHECK(selection.probes() == 0);
}

TEST_CASE("censored times do not bias the learned mean", "[core][ringmaster]") {
  // Shifted exponential, shift 1 + Exp(mean 1) (mean 2), every task stopped past 2.5: 22% are
  // censored. The complete times alone average about 1.65; the time on test gives the mean.
  ata::RingmasterSelection selection(1, 4);
  std::mt19937_64 rng(11);
  std::exponential_distribution<double> tail(1.0);
  double complete_sum = 0.0;
  std::size_t complete = 0;
  for (int k = 0; k < 40000; ++k) {
    const double t = 1.0 + tail(rng);
    if (t > 2.5) {
      selection.observe(0, 2.5, Outcome::censored);
    } else {
      selection.observe(0, t, Outcome::complete);
      complete_sum += t;
      ++complete;
    }
  }
  CHECK(selection.estimated_mean(0) == Approx(2.0).epsilon(0.02));
  CHECK(complete_sum / static_cast<double>(complete) < 1.8);  // what ignoring them would give
  CHECK(selection.censored_alarms() == 0);
}

TEST_CASE("a worker only ever stopped is estimated by its time on test, and drops out",
          "[core][ringmaster]") {
  // Worker 0 of mean 1 and worker 1 stopped at 2 s every time, R = 2: t({0}) = 3. Worker 1
  // counts as T / 2 after T seconds of censored time: it leaves once T / 2 >= 3 (a worker helps
  // only if its mean is below the bound; no slack: the bound's minimiser itself).
  ata::RingmasterSelection selection(
      2, 2, ata::RingmasterSelection::Options{}.set_exploration_budget(0.0).set_bound_slack(0.0));
  for (int k = 0; k < 10; ++k) selection.observe(0, 1.0, Outcome::complete);
  for (int k = 1; k <= 2; ++k) {
    selection.observe(1, 2.0, Outcome::censored);
    CHECK(selection.estimated_mean(1) == Approx(k));
    CHECK(as_vector(selection.select()) == std::vector<std::size_t>{0, 1});  // k < t({0}) = 3
  }
  selection.observe(1, 2.0, Outcome::censored);
  CHECK(selection.estimated_mean(1) == Approx(3.0));
  CHECK(as_vector(selection.select()) == std::vector<std::size_t>{0});
  // Its first complete time starts the learner afresh: the censored times before it are not
  // held against it.
  selection.observe(1, 0.5, Outcome::complete);
  CHECK(selection.estimated_mean(1) == 0.5);
}

TEST_CASE("a worker stopped far beyond its mean raises the censored-time alarm",
          "[core][ringmaster]") {
  ata::RingmasterSelection selection(2, 2, ata::RingmasterSelection::Options{}.set_exploration_budget(0.0));
  for (int k = 0; k < 20; ++k) {
    selection.observe(0, 1.0, Outcome::complete);
    selection.observe(1, 1.0, Outcome::complete);
  }
  CHECK(as_vector(selection.select()) == std::vector<std::size_t>{0, 1});
  // Worker 1 slows down: every task is stopped at 2 s. Its time-on-test mean grows slowly
  // (1 + k / 20 after k stops: 20 complete times dilute them), so it stays selected; the alarm
  // rings once the censored time 2k exceeds 18.42 x that mean, at k = 18.
  for (int k = 0; k < 17; ++k) selection.observe(1, 2.0, Outcome::censored);
  CHECK(selection.censored_alarms() == 0);
  CHECK(as_vector(selection.select()) == std::vector<std::size_t>{0, 1});
  selection.observe(1, 2.0, Outcome::censored);
  CHECK(selection.censored_alarms() == 1);
  CHECK(selection.estimated_mean(1) == 18.0);  // 36 s / 2, as a worker with censored times only
  CHECK(as_vector(selection.select()) == std::vector<std::size_t>{0});
  selection.observe(1, 1.0, Outcome::complete);  // a complete time ends the alarm
  CHECK(selection.estimated_mean(1) < 2.0);
}

TEST_CASE("the exploration credit probes the idle worker seen least recently",
          "[core][ringmaster]") {
  // Budget 0.5: every observed second earns half a second of probing.
  ata::RingmasterSelection selection(3, 1, ata::RingmasterSelection::Options{}.set_exploration_budget(0.5));
  selection.observe(2, 10.0, Outcome::complete);  // slow, and credit 5
  selection.observe(1, 4.0, Outcome::complete);   // credit 7
  selection.observe(0, 1.0, Outcome::complete);   // credit 7.5
  // R = 1: t({0}) = 2, worker 1's mean 4 is above: {0} alone; worker 1 (seen after 2) is not
  // the oldest; worker 2's mean 10 is above the credit 7.5, so nobody is probed yet.
  CHECK(as_vector(selection.select()) == std::vector<std::size_t>{0});
  for (int k = 0; k < 5; ++k) selection.observe(0, 1.0, Outcome::complete);  // credit 10
  CHECK(as_vector(selection.select()) == std::vector<std::size_t>{0, 2});
  CHECK(selection.probes() == 1);
  CHECK(selection.selected(2));
  CHECK(selection.probing() == std::optional<std::size_t>{2});
  selection.observe(2, 1.0, Outcome::complete);  // the probe's answer ends it: mean 5.5 now
  CHECK(as_vector(selection.select()) == std::vector<std::size_t>{0});
  CHECK(selection.probes() == 1);
}

#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_exception.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "ata/core/error.hpp"
#include "load_math.hpp"

using Catch::Approx;
using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::MessageMatches;
namespace svc = ata::service;

TEST_CASE("percentiles follow the nearest-rank rule", "[service]") {
  std::vector<double> hundred(100);
  std::iota(hundred.begin(), hundred.end(), 1.0);
  CHECK(svc::percentile(hundred, 0.0) == 1.0);
  CHECK(svc::percentile(hundred, 0.5) == 50.0);
  CHECK(svc::percentile(hundred, 0.9) == 90.0);
  CHECK(svc::percentile(hundred, 0.99) == 99.0);
  CHECK(svc::percentile(hundred, 0.991) == 100.0);
  CHECK(svc::percentile(hundred, 1.0) == 100.0);
  const std::vector<double> three{10.0, 20.0, 30.0};
  CHECK(svc::percentile(three, 0.5) == 20.0);
  CHECK(svc::percentile(three, 0.34) == 20.0);
  CHECK(svc::percentile(three, 0.33) == 10.0);
  CHECK_THROWS_MATCHES(svc::percentile({}, 0.5), ata::InvalidArgument,
                       MessageMatches(ContainsSubstring("no values")));
  CHECK_THROWS_MATCHES(svc::percentile(three, 1.5), ata::InvalidArgument,
                       MessageMatches(ContainsSubstring("[0, 1], got 1.5")));

  const auto s = svc::summarize({5.0, 1.0, 4.0, 2.0, 3.0});
  CHECK(s.count == 5);
  CHECK(s.mean == Approx(3.0));
  CHECK(s.p50 == 3.0);
  CHECK(s.p99 == 5.0);
  CHECK(s.max == 5.0);
  CHECK(svc::summarize({}).count == 0);
}

TEST_CASE("Poisson arrivals have exponential gaps at the given rate", "[service]") {
  ata::models::Rng rng(7, 0);
  const double rate = 200.0;
  const double duration = 50.0;
  const auto arrivals = svc::poisson_arrivals(rate, duration, 0, rng);
  // The count is Poisson with mean 10000: within 4 standard deviations.
  CHECK(std::abs(static_cast<double>(arrivals.size()) - rate * duration) < 4.0 * 100.0);
  REQUIRE(std::is_sorted(arrivals.begin(), arrivals.end()));
  CHECK(arrivals.front() >= 0.0);
  CHECK(arrivals.back() < duration);
  // Exponential gaps: mean 1/rate, and as many above the mean as e^-1 predicts.
  std::vector<double> gaps;
  double previous = 0.0;
  for (const double t : arrivals) {
    gaps.push_back(t - previous);
    previous = t;
  }
  const double mean =
      std::accumulate(gaps.begin(), gaps.end(), 0.0) / static_cast<double>(gaps.size());
  CHECK(mean == Approx(1.0 / rate).epsilon(0.05));
  const auto long_gaps =
      std::count_if(gaps.begin(), gaps.end(), [&](double g) { return g > 1.0 / rate; });
  CHECK(static_cast<double>(long_gaps) / static_cast<double>(gaps.size()) ==
        Approx(std::exp(-1.0)).margin(0.02));

  ata::models::Rng again(7, 0);
  CHECK(svc::poisson_arrivals(rate, duration, 0, again) == arrivals);
  ata::models::Rng bounded(7, 0);
  const auto first = svc::poisson_arrivals(rate, duration, 25, bounded);
  REQUIRE(first.size() == 25);
  CHECK(std::equal(first.begin(), first.end(), arrivals.begin()));
}

TEST_CASE("Poisson arrivals refuse rates, durations and counts out of range", "[service][errors]") {
  ata::models::Rng rng(1, 0);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  CHECK_THROWS_MATCHES(svc::poisson_arrivals(0.0, 1.0, 0, rng), ata::InvalidArgument,
                       MessageMatches(ContainsSubstring("rate must be finite and > 0")));
  CHECK_THROWS_AS(svc::poisson_arrivals(nan, 1.0, 0, rng), ata::InvalidArgument);
  CHECK_THROWS_MATCHES(svc::poisson_arrivals(1.0, -1.0, 0, rng), ata::InvalidArgument,
                       MessageMatches(ContainsSubstring("duration must be finite and > 0")));
  CHECK_THROWS_MATCHES(svc::poisson_arrivals(1e9, 100.0, 0, rng), ata::InvalidArgument,
                       MessageMatches(ContainsSubstring("more than the 10000000")));
  CHECK_THROWS_AS(svc::poisson_arrivals(1.0, 1.0, svc::kMostArrivals + 1, rng),
                  ata::InvalidArgument);
}

TEST_CASE("steady throughput ignores the ramp-up and the drain", "[service]") {
  std::vector<double> times;
  for (int k = 0; k < 100; ++k) times.push_back(1.0 + 0.01 * k);  // 100 per second
  times.push_back(30.0);                                          // a straggler at the end
  CHECK(svc::steady_throughput(times) == Approx(100.0).epsilon(0.02));
  CHECK(svc::steady_throughput({1.0, 2.0}) == 0.0);
}

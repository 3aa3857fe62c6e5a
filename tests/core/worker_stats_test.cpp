#include "ata/core/worker_stats.hpp"

#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_exception.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "ata/core/error.hpp"

using Catch::Approx;
using Catch::Matchers::ContainsSubstring;

TEST_CASE("worker stats match the textbook formulas", "[core][stats]") {
  ata::WorkerStats s;
  CHECK(s.count() == 0);
  CHECK(s.mean() == 0.0);
  CHECK(s.variance() == 0.0);
  s.add(2.0);
  CHECK(s.variance() == 0.0);
  for (double x : {4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0}) s.add(x);
  CHECK(s.count() == 8);
  CHECK(s.sum() == 40.0);
  CHECK(s.mean() == 5.0);
  CHECK(s.variance() == Approx(32.0 / 7.0));
  CHECK(s.stddev() == Approx(std::sqrt(32.0 / 7.0)));
}

TEST_CASE("Welford keeps the variance when the mean dwarfs the spread", "[core][stats]") {
  // Sum-of-squares loses every digit here: 1e9^2 = 1e18 swamps a variance of ~1.
  ata::WorkerStats s;
  std::mt19937_64 rng(3);
  std::normal_distribution<double> noise(0.0, 1.0);
  std::vector<double> xs(10000);
  for (auto& x : xs) x = 1e9 + noise(rng);
  double mean = 0.0;
  for (double x : xs) mean += (x - 1e9);
  mean = mean / static_cast<double>(xs.size()) + 1e9;
  double m2 = 0.0;
  for (double x : xs) m2 += (x - mean) * (x - mean);
  for (double x : xs) s.add(x);
  CHECK(s.mean() == Approx(mean).epsilon(1e-15));
  CHECK(s.variance() == Approx(m2 / static_cast<double>(xs.size() - 1)).epsilon(1e-6));
}

TEST_CASE("worker stats reject bad durations", "[core][stats][errors]") {
  ata::WorkerStats s;
  REQUIRE_THROWS_MATCHES(s.add(-1.0), ata::InvalidArgument,
                         Catch::Matchers::MessageMatches(ContainsSubstring("duration") &&
                                                         ContainsSubstring("-1")));
  REQUIRE_THROWS_WITH(s.add(std::numeric_limits<double>::quiet_NaN()), ContainsSubstring("nan"));
  REQUIRE_THROWS_WITH(s.add(std::numeric_limits<double>::infinity()), ContainsSubstring("inf"));
  CHECK(s.count() == 0);  // a rejected sample leaves the stats untouched
}

TEST_CASE("merged summaries equal one stream fed sample by sample", "[core][stats]") {
  // Chunks of a heavy-tailed stream around a large mean, summarised apart and merged in order,
  // against the same samples added one by one.
  std::mt19937_64 rng(11);
  std::exponential_distribution<double> tail(1.0);
  ata::WorkerStats whole;
  ata::WorkerStats merged;
  for (std::size_t chunk : {1U, 7U, 0U, 64U, 2U, 300U}) {
    ata::WorkerStats part;
    for (std::size_t t = 0; t < chunk; ++t) {
      const double x = 1e3 + tail(rng);
      whole.add(x);
      part.add(x);
    }
    merged.merge(part);
  }
  REQUIRE(merged.count() == whole.count());
  CHECK(merged.mean() == Approx(whole.mean()).epsilon(1e-13));
  CHECK(merged.variance() == Approx(whole.variance()).epsilon(1e-9));
  CHECK(merged.sum() == Approx(whole.sum()).epsilon(1e-13));

  ata::WorkerStats empty;
  merged.merge(empty);
  CHECK(merged.count() == whole.count());
  empty.merge(whole);
  CHECK(empty.mean() == whole.mean());
  CHECK(empty.variance() == whole.variance());
}

TEST_CASE("statistics built from moments merge like the samples behind them", "[core][stats]") {
  ata::WorkerStats samples;
  for (double x : {2.0, 4.0, 9.0}) samples.add(x);
  // Mean 5, squared deviations 9 + 1 + 16 = 26.
  const auto moments = ata::WorkerStats::from_moments(3, 5.0, 26.0);
  CHECK(moments.count() == 3);
  CHECK(moments.mean() == samples.mean());
  CHECK(moments.variance() == Approx(samples.variance()));
  CHECK(moments.sum() == Approx(samples.sum()));
  CHECK(ata::WorkerStats::from_moments(0, 1.0, 0.0).count() == 0);
  CHECK_THROWS_WITH(ata::WorkerStats::from_moments(2, -1.0, 0.0), ContainsSubstring("mean"));
  CHECK_THROWS_WITH(ata::WorkerStats::from_moments(2, 1.0, std::nan("")),
                    ContainsSubstring("squared deviations"));
}

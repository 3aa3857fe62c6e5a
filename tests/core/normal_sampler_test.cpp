#include "core/normal_sampler.hpp"

#include <catch2/catch_test_macros.hpp>
#include <cmath>
#include <cstdint>
#include <vector>

// The ziggurat draws standard normals: moments, tail masses (the posterior sampling of ata-auto
// depends on the lower tail) and the conditional tail sampler. Fixed seeds: deterministic.

TEST_CASE("the ziggurat draws standard normals, tails included", "[core][random]") {
  std::uint64_t state = 2024;
  constexpr int kDraws = 4'000'000;
  double sum = 0.0;
  double squares = 0.0;
  double cubes = 0.0;
  int below_minus_2 = 0;
  int below_minus_3 = 0;
  int above_3_5 = 0;  // inside the ziggurat's own tail (beyond r = 3.44)
  int not_finite = 0;
  for (int j = 0; j < kDraws; ++j) {
    const double z = ata::detail::standard_normal(state);
    not_finite += !std::isfinite(z);
    sum += z;
    squares += z * z;
    cubes += z * z * z;
    below_minus_2 += z < -2.0;
    below_minus_3 += z < -3.0;
    above_3_5 += z > 3.5;
  }
  CHECK(not_finite == 0);
  const double n = kDraws;
  // Standard errors: mean 1/sqrt(n) = 5e-4, variance sqrt(2/n) = 7e-4, third moment sqrt(15/n).
  CHECK(std::abs(sum / n) < 5 * 5e-4);
  CHECK(std::abs(squares / n - 1.0) < 5 * 7.1e-4);
  CHECK(std::abs(cubes / n) < 5 * std::sqrt(15.0 / n));
  // Expected counts n * Phi(-t), within 5 Poisson standard deviations.
  const auto near = [&](int count, double p) {
    const double expected = n * p;
    return std::abs(count - expected) < 5 * std::sqrt(expected);
  };
  CHECK(near(below_minus_2, 0.022750131948179195));
  CHECK(near(below_minus_3, 0.0013498980316300946));
  CHECK(near(above_3_5, 0.00023262907903552502));
}

TEST_CASE("the normal tail sampler draws X given X > r", "[core][random]") {
  std::uint64_t state = 7;
  constexpr int kDraws = 200'000;
  const double r = 4.0;
  double sum = 0.0;
  int beyond_4_5 = 0;
  int inside = 0;
  for (int j = 0; j < kDraws; ++j) {
    const double x = ata::detail::normal_tail(state, r);
    inside += !(x > r);
    sum += x;
    beyond_4_5 += x > 4.5;
  }
  CHECK(inside == 0);
  // E[X | X > 4] = phi(4) / Phi(-4) = 4.2256; P(X > 4.5 | X > 4) = Phi(-4.5) / Phi(-4) = 0.1075.
  CHECK(std::abs(sum / kDraws - 4.2256) < 0.005);
  CHECK(std::abs(beyond_4_5 / static_cast<double>(kDraws) - 0.10749) < 0.004);
}

TEST_CASE("a seed reproduces the draws", "[core][random]") {
  std::uint64_t a = 99;
  std::uint64_t b = 99;
  std::uint64_t c = 100;
  std::vector<double> x;
  std::vector<double> y;
  std::vector<double> z;
  for (int j = 0; j < 1000; ++j) {
    x.push_back(ata::detail::standard_normal(a));
    y.push_back(ata::detail::standard_normal(b));
    z.push_back(ata::detail::standard_normal(c));
  }
  CHECK(x == y);
  CHECK(x != z);
}

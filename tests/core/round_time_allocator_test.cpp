#include "core/round_time_allocator.hpp"

#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <cmath>
#include <random>
#include <vector>

#include "ata/core/solver.hpp"

using Catch::Approx;

namespace {

std::vector<std::size_t> solve(const std::vector<double>& means, const std::vector<double>& cv2,
                               std::size_t batch, double* predicted = nullptr,
                               std::vector<std::size_t> caps = {}) {
  if (caps.empty()) caps.assign(means.size(), batch);
  ata::detail::RoundTimeAllocator allocator;
  std::vector<std::size_t> tasks;
  const double p = allocator.solve(means, cv2, caps, batch, tasks);
  if (predicted != nullptr) *predicted = p;
  return tasks;
}

}  // namespace

TEST_CASE("normal quantiles and the balanced maximum's score", "[core][ata-auto]") {
  using ata::detail::normal_quantile;
  CHECK(normal_quantile(0.5) == Approx(0.0).margin(1e-12));
  CHECK(normal_quantile(0.975) == Approx(1.959963985).epsilon(1e-8));
  CHECK(normal_quantile(0.01) == Approx(-2.326347874).epsilon(1e-8));
  CHECK(normal_quantile(1e-6) == Approx(-4.753424309).epsilon(1e-8));
  double previous = 0.0;
  for (std::size_t m = 2; m <= 4096; m *= 2) {
    const double z = ata::detail::balanced_max_score(m);
    CHECK(z > previous);
    previous = z;
  }
  // The maximum of m exponentials: the quantile of probability 0.5704^(1/m) is H_m's
  // asymptote ln m + gamma.
  const double upper = -std::expm1(std::log(0.5703760182828) / 1000.0);
  CHECK(-std::log(upper) == Approx(std::log(1000.0) + 0.5772156649).epsilon(1e-3));
}

TEST_CASE("without spread the allocator is the min-max solver", "[core][ata-auto]") {
  std::mt19937_64 rng(8);
  std::lognormal_distribution<double> draw(0.0, 1.0);
  for (const std::size_t n : {1u, 3u, 10u, 40u}) {
    for (const std::size_t batch : {1u, 7u, 23u, 100u}) {
      std::vector<double> means(n);
      for (double& m : means) m = draw(rng);
      const std::vector<double> cv2(n, 0.0);
      const auto expected = ata::solve_min_max(means, batch);
      double predicted = 0.0;
      const auto tasks = solve(means, cv2, batch, &predicted);
      INFO("n = " << n << ", B = " << batch);
      CHECK(ata::Allocation(tasks) == expected);
      CHECK(predicted == Approx(expected.proxy_loss(means)).epsilon(1e-12));
    }
  }
}

TEST_CASE("the allocator drops slow workers whose single task would end the round late",
          "[core][ata-auto]") {
  // The cluster: 10 workers Exp(mean 1), 90 Exp(mean 20), B = 300. OFTA gives 21
  // tasks to each fast worker and 1 to each slow one (E ~ 101); the allocator, like EOFTA,
  // 30 to each fast worker (E ~ 39).
  std::vector<double> means(10, 1.0);
  means.resize(100, 20.0);
  const std::vector<double> cv2(100, 1.0);
  double predicted = 0.0;
  const auto tasks = solve(means, cv2, 300, &predicted);
  for (std::size_t i = 0; i < 100; ++i) CHECK(tasks[i] == (i < 10 ? 30u : 0u));
  CHECK(predicted == Approx(39.0).epsilon(0.05));
  // The expected maximum of 50 exponentials of mean 2, one task each: 2 H_50 = 8.996.
  const std::vector<double> equal(50, 2.0);
  const std::vector<double> one(50, 1.0);
  const auto spread = solve(equal, one, 50, &predicted);
  for (const std::size_t a : spread) CHECK(a == 1);
  CHECK(predicted == Approx(8.996).epsilon(0.03));
}

TEST_CASE("the allocator respects caps unless they leave no room", "[core][ata-auto]") {
  const std::vector<double> means{1.0, 2.0, 3.0};
  const std::vector<double> cv2(3, 0.25);
  const auto capped = solve(means, cv2, 9, nullptr, {2, 9, 9});
  CHECK(capped[0] == 2);
  CHECK(capped[0] + capped[1] + capped[2] == 9);
  const auto free = solve(means, cv2, 9, nullptr, {1, 1, 1});  // 3 < 9: ignored
  CHECK(free[0] + free[1] + free[2] == 9);
  CHECK(free[0] > 1);
}

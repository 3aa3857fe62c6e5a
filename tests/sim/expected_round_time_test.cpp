#include "ata/sim/expected_round_time.hpp"

#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "ata/ata.hpp"

using ata::Allocation;
using ata::models::TimeModel;
using Catch::Approx;
using Catch::Matchers::ContainsSubstring;

namespace {

// Every allocation of `batch` tasks over `workers` workers.
void for_each_allocation(std::size_t workers, std::size_t batch,
                         const std::function<void(const Allocation&)>& visit) {
  std::vector<std::size_t> tasks(workers, 0);
  std::function<void(std::size_t, std::size_t)> fill = [&](std::size_t i, std::size_t left) {
    if (i + 1 == workers) {
      tasks[i] = left;
      visit(Allocation(tasks));
      return;
    }
    for (std::size_t a = 0; a <= left; ++a) {
      tasks[i] = a;
      fill(i + 1, left - a);
    }
  };
  fill(0, batch);
}

struct BruteForce {
  Allocation allocation;
  double value = std::numeric_limits<double>::infinity();
};

BruteForce brute_force(const std::vector<TimeModel>& cluster, std::size_t batch) {
  BruteForce best;
  for_each_allocation(cluster.size(), batch, [&](const Allocation& a) {
    const double v = ata::sim::expected_round_time(cluster, a);
    if (v < best.value) best = {a, v};
  });
  return best;
}

double harmonic(int n) {
  double h = 0.0;
  for (int k = 1; k <= n; ++k) h += 1.0 / k;
  return h;
}

}  // namespace

TEST_CASE("expected round times match closed forms", "[sim][eofta]") {
  using ata::sim::expected_round_time;
  // max of two exponentials: m1 + m2 - 1 / (1/m1 + 1/m2)
  const std::vector<TimeModel> two{TimeModel::exponential(1.0), TimeModel::exponential(2.0)};
  CHECK(expected_round_time(two, Allocation({1, 1})) == Approx(3.0 - 2.0 / 3.0).epsilon(1e-10));
  // n i.i.d. exponentials of mean m, one task each: m H_n
  const std::vector<TimeModel> many(40, TimeModel::exponential(3.0));
  CHECK(expected_round_time(many, Allocation(std::vector<std::size_t>(40, 1))) ==
        Approx(3.0 * harmonic(40)).epsilon(1e-10));
  // One busy worker: E[S] = a mu whatever the law, the idle one adds nothing.
  const std::vector<TimeModel> mixed{TimeModel::shifted_exponential(29.0, 29.0),
                                     TimeModel::gamma(0.5, 4.0), TimeModel::constant(2.5)};
  CHECK(expected_round_time(mixed, Allocation({3, 0, 0})) == Approx(3 * 58.0).epsilon(1e-10));
  CHECK(expected_round_time(mixed, Allocation({0, 7, 0})) == Approx(7 * 2.0).epsilon(1e-10));
  CHECK(expected_round_time(mixed, Allocation({0, 0, 4})) == Approx(10.0).epsilon(1e-12));
  // max(X, c) with X ~ Exp(m): c + m exp(-c / m)
  const std::vector<TimeModel> step{TimeModel::exponential(2.0), TimeModel::constant(1.5)};
  CHECK(expected_round_time(step, Allocation({1, 2})) ==
        Approx(3.0 + 2.0 * std::exp(-1.5)).epsilon(1e-10));
  // Erlang(2, 1) against a constant 1: E = 1 + E[(S - 1)+] = 1 + integral_1^inf (1 + t) e^-t dt
  const std::vector<TimeModel> erlang{TimeModel::exponential(1.0), TimeModel::constant(1.0)};
  CHECK(expected_round_time(erlang, Allocation({2, 1})) ==
        Approx(1.0 + 3.0 * std::exp(-1.0)).epsilon(1e-10));
  // Constant times only: the proxy loss exactly.
  const std::vector<TimeModel> constants{TimeModel::constant(1.0), TimeModel::constant(2.0),
                                         TimeModel::constant(4.0)};
  CHECK(expected_round_time(constants, Allocation({4, 2, 1})) == Approx(4.0).epsilon(1e-12));
  CHECK(expected_round_time(constants, Allocation({0, 0, 0})) == 0.0);
}

TEST_CASE("expected round times of Monte Carlo laws agree with direct simulation", "[sim][eofta]") {
  const std::vector<TimeModel> cluster{TimeModel::uniform(0.0, 2.0), TimeModel::lognormal(0.0, 0.5),
                                       TimeModel::half_normal(1.0)};
  const Allocation a({3, 2, 2});
  double direct = 0.0;
  constexpr int kRounds = 200000;
  std::vector<ata::models::Rng> rngs{ata::models::Rng(99, 0), ata::models::Rng(99, 1),
                                     ata::models::Rng(99, 2)};
  for (int r = 0; r < kRounds; ++r) {
    double wall = 0.0;
    for (std::size_t i = 0; i < cluster.size(); ++i) {
      double busy = 0.0;
      for (std::size_t t = 0; t < a[i]; ++t) busy += cluster[i].sample(rngs[i]);
      wall = std::max(wall, busy);
    }
    direct += wall;
  }
  direct /= kRounds;
  CHECK(ata::sim::expected_round_time(cluster, a) == Approx(direct).epsilon(0.01));
}

TEST_CASE("EOFTA equals the brute-force optimum on small clusters", "[sim][eofta]") {
  const std::vector<std::vector<TimeModel>> clusters{
      {TimeModel::exponential(1.0), TimeModel::exponential(1.5), TimeModel::exponential(6.0)},
      {TimeModel::shifted_exponential(1.0, 1.0), TimeModel::shifted_exponential(1.2, 1.2),
       TimeModel::exponential(3.0), TimeModel::gamma(4.0, 0.9)},
      {TimeModel::exponential(1.0), TimeModel::exponential(20.0), TimeModel::exponential(20.0),
       TimeModel::exponential(20.0)},
      {TimeModel::gamma(0.5, 2.0), TimeModel::gamma(9.0, 0.2), TimeModel::constant(1.7),
       TimeModel::exponential(2.5)},
      {TimeModel::uniform(0.5, 1.5), TimeModel::lognormal(0.2, 1.0), TimeModel::exponential(1.1)}};
  for (std::size_t c = 0; c < clusters.size(); ++c) {
    for (const std::size_t batch : {1u, 2u, 5u, 8u}) {
      INFO("cluster " << c << ", B = " << batch);
      const auto solution = ata::sim::solve_eofta(clusters[c], batch);
      const BruteForce best = brute_force(clusters[c], batch);
      // Exact laws: to the quadrature's precision. Monte Carlo laws: the same paths, but each
      // allocation's own quadrature integrates their steps slightly differently.
      const double tolerance = c == 4 ? 1e-4 : 1e-8;
      CHECK(solution.allocation.total() == batch);
      CHECK(solution.expected_round_time == Approx(best.value).epsilon(tolerance));
      CHECK(ata::sim::expected_round_time(clusters[c], solution.allocation) ==
            Approx(best.value).epsilon(tolerance));
      CHECK(solution.lower_bound <= best.value * (1.0 + 1e-9));
      CHECK(solution.expected_round_time <= solution.ofta_expected_round_time);
      CHECK(solution.exact == (c != 4));
    }
  }
}

TEST_CASE("EOFTA drops slow, dispersed workers that OFTA keeps", "[sim][eofta]") {
  // The cluster: 10 workers Exp(mean 1), 90 Exp(mean 20), B = 300.
  std::vector<TimeModel> cluster(10, TimeModel::exponential(1.0));
  cluster.resize(100, TimeModel::exponential(20.0));
  const auto solution = ata::sim::solve_eofta(cluster, 300);
  for (std::size_t i = 0; i < 100; ++i) CHECK(solution.allocation[i] == (i < 10 ? 30u : 0u));
  CHECK(solution.ofta_expected_round_time == Approx(20.0 * harmonic(90)).epsilon(0.01));
  CHECK(solution.expected_round_time == Approx(38.97).epsilon(0.001));
  CHECK(solution.lower_bound >= 0.99 * solution.expected_round_time);
}

TEST_CASE("EOFTA is OFTA when the times barely vary", "[sim][eofta]") {
  const std::vector<double> means{1.0, 1.3, 2.0, 3.1, 4.4, 7.0};
  for (const std::size_t batch : {3u, 10u, 23u}) {
    INFO("B = " << batch);
    const double proxy = ata::solve_min_max(means, batch).proxy_loss(means);
    std::vector<TimeModel> constant;
    std::vector<TimeModel> narrow;  // gamma with cv 1%
    for (const double m : means) {
      constant.push_back(TimeModel::constant(m));
      narrow.push_back(TimeModel::gamma(1e4, m * 1e-4));
    }
    const auto exact = ata::sim::solve_eofta(constant, batch);
    CHECK(exact.expected_round_time == Approx(proxy).epsilon(1e-12));
    CHECK(exact.allocation.proxy_loss(means) == Approx(proxy).epsilon(1e-12));
    CHECK(exact.lower_bound == Approx(proxy).epsilon(1e-9));
    const auto close = ata::sim::solve_eofta(narrow, batch);
    CHECK(close.allocation.proxy_loss(means) == Approx(proxy).epsilon(1e-12));
    CHECK(close.expected_round_time == Approx(proxy).epsilon(0.05));
  }
}

TEST_CASE("expected round times reject bad input", "[sim][eofta][errors]") {
  const std::vector<TimeModel> cluster{TimeModel::exponential(1.0), TimeModel::exponential(2.0)};
  REQUIRE_THROWS_WITH(ata::sim::expected_round_time(cluster, Allocation(3)),
                      ContainsSubstring("3 workers") && ContainsSubstring("has 2"));
  REQUIRE_THROWS_WITH(ata::sim::expected_round_time({}, Allocation()),
                      ContainsSubstring("at least one worker"));
  REQUIRE_THROWS_WITH(ata::sim::solve_eofta(cluster, 0), ContainsSubstring("B must be >= 1"));
  ata::sim::RoundTimeOptions few;
  few.monte_carlo_paths = 10;
  REQUIRE_THROWS_WITH(ata::sim::solve_eofta(cluster, 3, few),
                      ContainsSubstring("monte_carlo_paths") && ContainsSubstring("10"));
  // Too large a search is refused before it allocates.
  const std::vector<TimeModel> large(5000, TimeModel::shifted_exponential(1.0, 1.0));
  REQUIRE_THROWS_WITH(ata::sim::solve_eofta(large, 5000), ContainsSubstring("n = 5000") &&
                                                              ContainsSubstring("B = 5000") &&
                                                              ContainsSubstring("at most 5e+07"));
}

TEST_CASE("EOFTA is sized before it is solved, and a size that does not fit is no error",
          "[sim][eofta][cost]") {
  const auto laws = [](const char* preset, std::size_t n) {
    const auto scenario = ata::models::make_preset(preset, n);
    return std::vector<ata::models::TimeModel>(scenario.models().begin(), scenario.models().end());
  };
  const auto small = laws("cifar", 51);
  const ata::sim::EoftaCost fits = ata::sim::estimate_eofta_cost(small, 23);
  CHECK(fits.fits());
  CHECK(fits.values > 0.0);
  CHECK(fits.values <= fits.max_values);
  CHECK(fits.sweep_terms > 0.0);
  CHECK_NOTHROW(ata::sim::solve_eofta(small, 23));
  // A limit on the sweep leaves it out with the reason.
  const ata::sim::EoftaCost slow = ata::sim::estimate_eofta_cost(small, 23, {}, 1.0);
  CHECK_FALSE(slow.fits());
  CHECK(slow.reason.find("terms per sweep") != std::string::npos);
  // The sizes ata-sim used to refuse: sized in well under a second, no exception.
  for (const auto& [preset, n] : {std::pair{"sqrt", std::size_t{2000}}, std::pair{"log", std::size_t{1000}}}) {
    const auto big = laws(preset, n);
    ata::sim::EoftaCost cost;
    REQUIRE_NOTHROW(cost = ata::sim::estimate_eofta_cost(big, 500));
    CHECK_FALSE(cost.fits());
    CHECK(cost.values > cost.max_values);
    CHECK(cost.reason.find("would hold about") != std::string::npos);
    CHECK_THROWS_AS(ata::sim::solve_eofta(big, 500), ata::InvalidArgument);
  }
  CHECK_THROWS_AS(ata::sim::estimate_eofta_cost(small, 0), ata::InvalidArgument);
}

TEST_CASE("the objective weighs worker time by its price, 1/n by default", "[sim][objective]") {
  const ata::Objective by_default;
  CHECK(by_default.price(51) == 1.0 / 51.0);
  CHECK(by_default.value(10.0, 255.0, 51) == 10.0 + 255.0 / 51.0);
  CHECK(ata::Objective{0.0}.value(10.0, 255.0, 51) == 10.0);
  CHECK(ata::Objective{2.0}.value(10.0, 5.0, 51) == 20.0);
  CHECK_THROWS_AS(ata::Objective{-1.0}.check(), ata::InvalidArgument);
  CHECK_THROWS_AS(ata::Objective{std::numeric_limits<double>::infinity()}.price(3), ata::InvalidArgument);
  CHECK_THROWS_AS(by_default.price(0), ata::InvalidArgument);
  ata::sim::ExperimentConfig config;
  config.rounds = 20;
  config.objective.work_price = 0.5;
  const ata::sim::StrategyRun run = ata::sim::run_strategy(config, "race:3");
  CHECK(run.work_price == 0.5);
  CHECK(run.objective == run.wall_time + 0.5 * run.worker_time);
}

#include "ata/core/solver.hpp"

#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_exception.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "ata/core/error.hpp"
#include "support/reference_solvers.hpp"

using ata::Allocation;
using ata::MinMaxSolver;
using Catch::Matchers::ContainsSubstring;

namespace {

std::vector<std::size_t> as_vector(const Allocation& a) { return {a.begin(), a.end()}; }

// Scores drawn from a few levels so that ties are common; zeros with probability `zero_share`.
std::vector<double> tie_heavy_scores(std::mt19937_64& rng, std::size_t n, double zero_share) {
  std::uniform_int_distribution<int> level(1, 4);
  std::bernoulli_distribution zero(zero_share);
  std::vector<double> scores(n);
  for (auto& s : scores) s = zero(rng) ? 0.0 : 0.5 * level(rng);
  return scores;
}

}  // namespace

TEST_CASE("solver matches the worked example", "[core][solver]") {
  const std::vector<double> scores{1.0, 2.0, 4.0};
  CHECK(as_vector(ata::solve_min_max(scores, 7)) == std::vector<std::size_t>{4, 2, 1});
  CHECK(as_vector(ata::solve_min_max(scores, 1)) == std::vector<std::size_t>{1, 0, 0});
}

TEST_CASE("solver is optimal and canonical against brute force for n <= 6, B <= 8",
          "[core][solver][property]") {
  std::mt19937_64 rng(20250201);
  std::uniform_real_distribution<double> continuous(0.1, 10.0);
  MinMaxSolver solver;
  for (std::size_t n = 1; n <= 6; ++n) {
    for (std::size_t batch = 1; batch <= 8; ++batch) {
      for (int trial = 0; trial < 30; ++trial) {
        std::vector<double> scores =
            trial % 2 == 0 ? tie_heavy_scores(rng, n, 0.0) : std::vector<double>(n);
        if (trial % 2 == 1) {
          for (auto& s : scores) s = continuous(rng);
        }
        const Allocation a = solver.solve(scores, batch);
        INFO("n=" << n << " B=" << batch << " trial=" << trial);
        REQUIRE(a.total() == batch);
        REQUIRE(a.proxy_loss(scores) == ata::testing::brute_force_min_loss(scores, batch));
        REQUIRE(as_vector(a) == ata::testing::naive_greedy(scores, batch));
      }
    }
  }
}

TEST_CASE("zero scores take every task, spread round robin", "[core][solver][property]") {
  std::mt19937_64 rng(7);
  for (std::size_t n = 1; n <= 6; ++n) {
    for (std::size_t batch = 1; batch <= 8; ++batch) {
      std::vector<double> scores = tie_heavy_scores(rng, n, 0.5);
      scores[rng() % n] = 0.0;
      const Allocation a = ata::solve_min_max(scores, batch);
      INFO("n=" << n << " B=" << batch);
      REQUIRE(a.total() == batch);
      REQUIRE(a.proxy_loss(scores) == 0.0);
      REQUIRE(ata::testing::brute_force_min_loss(scores, batch) == 0.0);
      std::size_t most = 0;
      std::size_t least = batch;
      for (std::size_t i = 0; i < n; ++i) {
        if (scores[i] != 0.0) {
          REQUIRE(a[i] == 0);
        } else {
          most = std::max(most, a[i]);
          least = std::min(least, a[i]);
        }
      }
      REQUIRE(most - least <= 1);
    }
  }
}

TEST_CASE("the spread counter carries over between rounds", "[core][solver]") {
  MinMaxSolver solver;
  const std::vector<double> scores{0.0, 3.0, 0.0, 0.0};
  // Round 1: tasks 0, 1 go to zero-score workers 0, 2; round 2 continues at worker 3.
  CHECK(as_vector(solver.solve(scores, 2)) == std::vector<std::size_t>{1, 0, 1, 0});
  CHECK(as_vector(solver.solve(scores, 2)) == std::vector<std::size_t>{1, 0, 0, 1});
  CHECK(solver.spread().offset() == 4);

  ata::RoundRobinSpread spread;
  Allocation a(5);
  const std::vector<std::size_t> everyone{0, 1, 2, 3, 4};
  spread.spread(everyone, 7, a);
  CHECK(as_vector(a) == std::vector<std::size_t>{2, 2, 1, 1, 1});
  a.clear();
  spread.spread(everyone, 3, a);  // starts at 7 mod 5 = 2
  CHECK(as_vector(a) == std::vector<std::size_t>{0, 0, 1, 1, 1});
}

TEST_CASE("solver keeps its invariants on large random cases", "[core][solver][property]") {
  std::mt19937_64 rng(99);
  std::lognormal_distribution<double> spread_out(0.0, 2.0);
  MinMaxSolver solver;
  Allocation a;
  const std::pair<std::size_t, std::size_t> sizes[] = {{51, 23},      {459, 23},  {1000, 5000},
                                                       {10000, 1000}, {3, 10000}, {5000, 5000}};
  for (const auto& [n, batch] : sizes) {
    std::vector<double> scores(n);
    for (auto& s : scores) s = spread_out(rng);
    solver.solve(scores, batch, a);
    INFO("n=" << n << " B=" << batch);
    REQUIRE(a.size() == n);
    REQUIRE(a.total() == batch);
    REQUIRE(as_vector(a) == ata::testing::naive_greedy(scores, batch));
  }
}

TEST_CASE("solver survives extreme score ranges", "[core][solver]") {
  const std::vector<double> scores{1e-310, 1.0, 1e300};
  const Allocation a = ata::solve_min_max(scores, 5);
  CHECK(as_vector(a) == std::vector<std::size_t>{5, 0, 0});
}

// Found by fuzz/fuzz_solver (fuzz/regressions/fuzz_solver/): sum(1/s_i) overflowed for
// subnormal scores, so the heap placed every task one by one; a level above the largest double
// was converted to an integer (undefined behaviour).
TEST_CASE("solver places huge batches at once for subnormal and huge scores", "[core][solver]") {
  const double tiny = std::numeric_limits<double>::denorm_min();
  CHECK(as_vector(ata::solve_min_max(std::vector<double>{tiny, 3 * tiny}, 4'000'000'000'000'000)) ==
        std::vector<std::size_t>{3'000'000'000'000'000, 1'000'000'000'000'000});
  // j 2^996 is finite for j < 2^28 and 3 j 2^996 for j <= 89478485; every later cost is
  // infinity, a tie the greedy breaks by index, so worker 0 takes the rest.
  const double huge = std::ldexp(1.0, 996);
  CHECK(as_vector(ata::solve_min_max(std::vector<double>{huge, 3 * huge}, 1'000'000'000)) ==
        std::vector<std::size_t>{910'521'515, 89'478'485});
  // Near 2^64 the rounded counts summed past 2^64 and wrapped, leaving ~B tasks to the heap.
  const std::size_t near_max = std::numeric_limits<std::size_t>::max() - 255;
  CHECK(ata::solve_min_max(std::vector<double>{1.2655e-319, 9.63e-321}, near_max).total() ==
        near_max);
}

TEST_CASE("solver rejects bad input with a message naming the value", "[core][solver][errors]") {
  const std::vector<double> ok{1.0, 2.0};
  REQUIRE_THROWS_MATCHES(ata::solve_min_max(ok, 0), ata::InvalidArgument,
                         Catch::Matchers::MessageMatches(ContainsSubstring("B must be >= 1")));
  REQUIRE_THROWS_WITH(ata::solve_min_max(std::vector<double>{}, 3), ContainsSubstring("0 workers"));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  REQUIRE_THROWS_WITH(ata::solve_min_max(std::vector<double>{1.0, nan}, 3),
                      ContainsSubstring("worker 1") && ContainsSubstring("nan"));
  REQUIRE_THROWS_WITH(ata::solve_min_max(std::vector<double>{inf, 1.0}, 3),
                      ContainsSubstring("worker 0") && ContainsSubstring("inf"));
  REQUIRE_THROWS_WITH(ata::solve_min_max(std::vector<double>{1.0, -2.0}, 3),
                      ContainsSubstring("worker 1") && ContainsSubstring("-2"));
  ata::RoundRobinSpread spread;
  Allocation a(2);
  REQUIRE_THROWS_AS(spread.spread({}, 1, a), ata::InvalidArgument);
}

TEST_CASE("negative zero counts as a zero score", "[core][solver]") {
  const ata::Allocation a = ata::solve_min_max(std::vector<double>{1.0, -0.0, 2.0}, 3);
  CHECK(as_vector(a) == std::vector<std::size_t>{0, 3, 0});
}

TEST_CASE("solver with offsets is optimal and canonical against brute force",
          "[core][solver][property]") {
  std::mt19937_64 rng(20261130);
  std::uniform_real_distribution<double> continuous(0.1, 10.0);
  std::uniform_int_distribution<int> offset_level(0, 6);
  MinMaxSolver solver;
  Allocation a;
  for (std::size_t n = 1; n <= 6; ++n) {
    for (std::size_t batch = 1; batch <= 8; ++batch) {
      for (int trial = 0; trial < 30; ++trial) {
        std::vector<double> scores =
            trial % 2 == 0 ? tie_heavy_scores(rng, n, 0.0) : std::vector<double>(n);
        std::vector<double> offsets(n);
        if (trial % 2 == 1) {
          for (auto& s : scores) s = continuous(rng);
          for (auto& q : offsets) q = continuous(rng) * offset_level(rng);
        } else {
          for (auto& q : offsets) q = 0.5 * offset_level(rng);  // ties with task values
        }
        solver.solve(scores, offsets, batch, a);
        INFO("n=" << n << " B=" << batch << " trial=" << trial);
        REQUIRE(a.total() == batch);
        REQUIRE(ata::testing::loss_of(as_vector(a), scores, offsets) ==
                ata::testing::brute_force_min_loss(scores, batch, offsets));
        REQUIRE(as_vector(a) == ata::testing::naive_greedy(scores, batch, offsets));
      }
    }
  }
}

TEST_CASE("solver with offsets matches the greedy on large random cases",
          "[core][solver][property]") {
  std::mt19937_64 rng(5);
  std::lognormal_distribution<double> spread_out(0.0, 2.0);
  std::exponential_distribution<double> backlog(0.02);
  MinMaxSolver solver;
  Allocation a;
  const std::pair<std::size_t, std::size_t> sizes[] = {{16, 16},     {51, 23},     {459, 23},
                                                       {1000, 5000}, {3000, 1000}, {3, 10000}};
  for (const auto& [n, batch] : sizes) {
    std::vector<double> scores(n);
    std::vector<double> offsets(n);
    for (auto& s : scores) s = spread_out(rng);
    for (std::size_t i = 0; i < n; ++i) offsets[i] = i % 3 == 0 ? 0.0 : backlog(rng) * scores[i];
    solver.solve(scores, offsets, batch, a);
    INFO("n=" << n << " B=" << batch);
    REQUIRE(a.total() == batch);
    REQUIRE(as_vector(a) == ata::testing::naive_greedy(scores, batch, offsets));
  }
}

TEST_CASE("zero offsets change nothing; zero scores are spread as without offsets",
          "[core][solver]") {
  std::mt19937_64 rng(11);
  std::lognormal_distribution<double> spread_out(0.0, 1.0);
  MinMaxSolver plain;
  MinMaxSolver offset;
  Allocation a;
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<double> scores(1 + rng() % 40);
    for (auto& s : scores) s = rng() % 5 == 0 ? 0.0 : spread_out(rng);
    const std::size_t batch = 1 + rng() % 60;
    const std::vector<double> zeros(scores.size(), 0.0);
    offset.solve(scores, zeros, batch, a);
    REQUIRE(a == plain.solve(scores, batch));
  }
  // An unseen worker gets the batch even when it is the most loaded.
  offset.solve(std::vector<double>{1.0, 0.0}, std::vector<double>{0.0, 100.0}, 3, a);
  CHECK(as_vector(a) == std::vector<std::size_t>{0, 3});
}

TEST_CASE("a backlog steers tasks to idle workers", "[core][solver]") {
  // Equal speeds; worker 0 has 4 tasks' worth queued: the 6 new tasks fill the others first.
  Allocation a;
  MinMaxSolver solver;
  solver.solve(std::vector<double>{1.0, 1.0, 1.0}, std::vector<double>{4.0, 0.0, 0.0}, 6, a);
  CHECK(as_vector(a) == std::vector<std::size_t>{0, 3, 3});
  // Then level 5 is reached by all three (ties by index).
  solver.solve(std::vector<double>{1.0, 1.0, 1.0}, std::vector<double>{4.0, 0.0, 0.0}, 11, a);
  CHECK(as_vector(a) == std::vector<std::size_t>{1, 5, 5});
  // Extreme ranges: a tiny score next to a huge offset.
  solver.solve(std::vector<double>{1e-310, 1.0}, std::vector<double>{1e300, 0.0}, 5, a);
  CHECK(as_vector(a) == std::vector<std::size_t>{0, 5});
}

TEST_CASE("solver rejects bad offsets", "[core][solver][errors]") {
  MinMaxSolver solver;
  Allocation a;
  const std::vector<double> scores{1.0, 2.0};
  REQUIRE_THROWS_WITH(solver.solve(scores, std::vector<double>{1.0}, 3, a),
                      ContainsSubstring("one per worker (2), got 1"));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  REQUIRE_THROWS_WITH(solver.solve(scores, std::vector<double>{0.0, nan}, 3, a),
                      ContainsSubstring("offset of worker 1") && ContainsSubstring("nan"));
  REQUIRE_THROWS_WITH(solver.solve(scores, std::vector<double>{-1.0, 0.0}, 3, a),
                      ContainsSubstring("offset of worker 0") && ContainsSubstring("-1"));
}

TEST_CASE("solver with offsets places huge batches at once for subnormal and huge scores",
          "[core][solver]") {
  // Found by fuzzing the plain solver; the offsets path had the same hang.
  MinMaxSolver solver;
  Allocation a;
  const std::size_t huge = 1'000'000'000'000;
  solver.solve(std::vector<double>{9.63e-321, 1.2655e-319}, std::vector<double>{1.0, 0.0}, huge, a);
  CHECK(a.total() == huge);
  solver.solve(std::vector<double>{1e300, 3e300}, std::vector<double>{1e300, 0.0}, huge, a);
  CHECK(a.total() == huge);
  const std::size_t most = std::numeric_limits<std::size_t>::max() - 3;
  solver.solve(std::vector<double>{1.0, 2.0, 3.0}, std::vector<double>{5.0, 0.0, 1.0}, most, a);
  CHECK(a.total() == most);
}

TEST_CASE("solver with offsets places tasks whose values round flat in one step",
          "[core][solver]") {
  // Found by fuzzing solve() with offsets: when an offset dwarfs the score, q + j s rounds to q
  // for billions of j, and the placing and dropping loops went one task at a time (a hang).
  MinMaxSolver solver;
  Allocation a;
  const std::size_t large = 280'375'465'082'892;
  solver.solve(std::vector<double>{5e-324}, std::vector<double>{1.0}, large, a);
  CHECK(a.total() == large);
  solver.solve(std::vector<double>{2.17e183}, std::vector<double>{3e300}, large, a);
  CHECK(a.total() == large);
  // Ties between flat workers go to the lower index, as in the greedy.
  solver.solve(std::vector<double>{1e-300, 1e-300}, std::vector<double>{1.0, 1.0}, large, a);
  CHECK(a[0] == large);
  CHECK(a[1] == 0);
  // Small enough for the naive greedy, with every value of worker 0 flat at its offset.
  const std::vector<double> scores{1e-20, 0.5, 1e-20};
  const std::vector<double> offsets{1.0, 0.0, 1.0};
  solver.solve(scores, offsets, 5000, a);
  CHECK(as_vector(a) == ata::testing::naive_greedy(scores, 5000, offsets));
}

TEST_CASE("solver with offsets keeps its level precise when the smallest score is held back",
          "[core][solver]") {
  // Found by fuzzing solve() with offsets. The water-fill's sums were relative to the smallest
  // score of every candidate, here worker 3's, which its offset keeps out: every share was
  // subnormal, the level far off, and the excess of ~10^13 tasks was dropped a few hundred at a
  // time (a hang).
  MinMaxSolver solver;
  Allocation a;
  const std::size_t most = 4'635'329'916'471'083'012;
  solver.solve(std::vector<double>{21.0, 90.0, 63.0, 4.1424993e-317},
               std::vector<double>{53.0, 26.0, 0.0, 5.636555926278995e221}, most, a);
  CHECK(a.total() == most);
  CHECK(a[3] == 0);
}

TEST_CASE("solver with offsets finds its level when B s passes the largest double",
          "[core][solver]") {
  // Found by fuzzing solve() with offsets. B s overflowed while the level itself was finite, so
  // every finite pair counted (about 1.8 10^12 for B ~ 10^12), and the surplus was dropped one
  // task at a time between the two equal workers (a hang).
  MinMaxSolver solver;
  Allocation a;
  const std::vector<double> scores{2.9634392841471548e296, 3.0135153699541016e296,
                                   3.0135153699541016e296};
  const std::vector<double> offsets(3, 3.0135153699541016e296);
  const auto cost = [&](std::size_t i, std::size_t j) {
    return offsets[i] + static_cast<double>(j) * scores[i];
  };
  for (const std::size_t batch :
       {std::size_t{1'065'136'422'912}, std::size_t{100'000'000'000'000}}) {
    solver.solve(scores, offsets, batch, a);
    REQUIRE(a.total() == batch);
    // The greedy's certificate: no pair left out comes before a pair taken (lower index first).
    for (std::size_t taken = 0; taken < 3; ++taken) {
      for (std::size_t left = 0; left < 3; ++left) {
        if (left == taken) continue;  // a worker's own pairs go in order of j
        const double last = cost(taken, a[taken]);
        const double next = cost(left, a[left] + 1);
        CHECK((last < next || (last == next && taken < left)));
      }
    }
  }
  // Past every finite pair, the tasks of infinite cost go to the lowest index.
  CHECK(a[0] > a[1]);
  CHECK(a[1] == a[2]);
}

// Solver time at the paper's sizes and beyond, side by side with the naive O(n B) greedy.
//   ./build/bench/ata_bench_solver --benchmark_min_time=0.2
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "ata/core/solver.hpp"
#include "support/reference_solvers.hpp"

namespace {

std::vector<double> random_scores(std::size_t n) {
  std::mt19937_64 rng(42);
  std::lognormal_distribution<double> draw(0.0, 1.0);
  std::vector<double> scores(n);
  for (auto& s : scores) s = draw(rng);
  return scores;
}

void BM_MinMaxSolver(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto batch = static_cast<std::size_t>(state.range(1));
  const std::vector<double> scores = random_scores(n);
  ata::MinMaxSolver solver;
  ata::Allocation out;
  for (auto _ : state) {
    solver.solve(scores, batch, out);
    benchmark::DoNotOptimize(out.total());
  }
}

// With a backlog on two workers in three (load-aware allocation of overlapping batches).
void BM_MinMaxSolverOffsets(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto batch = static_cast<std::size_t>(state.range(1));
  const std::vector<double> scores = random_scores(n);
  std::vector<double> offsets(n);
  for (std::size_t i = 0; i < n; ++i) offsets[i] = i % 3 == 0 ? 0.0 : 3.0 * scores[i];
  ata::MinMaxSolver solver;
  ata::Allocation out;
  for (auto _ : state) {
    solver.solve(scores, offsets, batch, out);
    benchmark::DoNotOptimize(out.total());
  }
}

void BM_NaiveGreedy(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto batch = static_cast<std::size_t>(state.range(1));
  const std::vector<double> scores = random_scores(n);
  for (auto _ : state) {
    auto tasks = ata::testing::naive_greedy(scores, batch);
    benchmark::DoNotOptimize(tasks.data());
  }
}

void Sizes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"n", "B"});
  b->Args({51, 23})->Args({459, 23})->Args({10'000, 1'000})->Args({100'000, 10'000});
}

}  // namespace

BENCHMARK(BM_MinMaxSolver)->Apply(Sizes);
BENCHMARK(BM_MinMaxSolverOffsets)->Apply(Sizes);
BENCHMARK(BM_NaiveGreedy)->Apply(Sizes)->Unit(benchmark::kMicrosecond);

// Simulator throughput: rounds per second of one strategy, single-threaded, no SGD.
//   ./build/bench/ata_bench_sim --benchmark_min_time=1
// Target (issue 3): >= 300,000 rounds/s for ATA at n = 459, B = 23.
#include <benchmark/benchmark.h>

#include <string>

#include "ata/core/make_policy.hpp"
#include "ata/models/scenario.hpp"
#include "ata/sim/simulation.hpp"

namespace {

void BM_SimulatedRound(benchmark::State& state, const std::string& strategy, std::size_t workers) {
  const auto scenario = ata::models::make_preset("sqrt", workers);
  ata::PolicyOptions options;
  options.alpha = scenario.max_mean();
  options.means = scenario.means();
  const auto policy = ata::make_policy(strategy, workers, options);
  ata::sim::Simulation simulation(scenario, *policy, 23, 1);
  for (auto _ : state) benchmark::DoNotOptimize(simulation.run_round().wall_time);
  state.counters["rounds/s"] = benchmark::Counter(static_cast<double>(state.iterations()),
                                                  benchmark::Counter::kIsRate);
}

}  // namespace

BENCHMARK_CAPTURE(BM_SimulatedRound, ata_n459, std::string("ata"), 459);
BENCHMARK_CAPTURE(BM_SimulatedRound, ata_e_n459, std::string("ata-e"), 459);
BENCHMARK_CAPTURE(BM_SimulatedRound, ata_auto_n459, std::string("ata-auto"), 459);
BENCHMARK_CAPTURE(BM_SimulatedRound, ofta_n459, std::string("ofta"), 459);
BENCHMARK_CAPTURE(BM_SimulatedRound, uta_n459, std::string("uta"), 459);
BENCHMARK_CAPTURE(BM_SimulatedRound, gta_n459, std::string("gta"), 459);
BENCHMARK_CAPTURE(BM_SimulatedRound, ata_n51, std::string("ata"), 51);
BENCHMARK_CAPTURE(BM_SimulatedRound, ata_auto_n51, std::string("ata-auto"), 51);

// Cost of one timestamp: the task clock (invariant TSC where usable) against steady_clock, and
// how far the two drift apart over a run (the "drift_ppm" counter of BM_TaskClockAgreement).
//   ./build/bench/ata_bench_clock --benchmark_min_time=0.2
#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
#include <thread>

#include "runtime/task_clock.hpp"

namespace {

using ata::runtime::detail::TaskClock;

void BM_SteadyClock(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(std::chrono::steady_clock::now());
}

void BM_TaskClock(benchmark::State& state) {
  const TaskClock& clock = TaskClock::instance();
  state.counters["tsc"] = clock.uses_tsc() ? 1.0 : 0.0;
  for (auto _ : state) benchmark::DoNotOptimize(clock.now());
}

// Each iteration times a 50 ms sleep with both clocks; drift_ppm is the largest relative
// difference seen, in parts per million.
void BM_TaskClockAgreement(benchmark::State& state) {
  const TaskClock& clock = TaskClock::instance();
  double worst = 0.0;
  for (auto _ : state) {
    const auto steady_start = std::chrono::steady_clock::now();
    const auto ticks_start = clock.now();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const auto ticks_end = clock.now();
    const auto steady_end = std::chrono::steady_clock::now();
    const double task =
        std::chrono::duration<double>(clock.to_duration(ticks_end - ticks_start)).count();
    const double steady = std::chrono::duration<double>(steady_end - steady_start).count();
    worst = std::max(worst, std::abs(task - steady) / steady);
  }
  state.counters["drift_ppm"] = worst * 1e6;
}

}  // namespace

BENCHMARK(BM_SteadyClock);
BENCHMARK(BM_TaskClock);
BENCHMARK(BM_TaskClockAgreement)->Iterations(20)->Unit(benchmark::kMillisecond);

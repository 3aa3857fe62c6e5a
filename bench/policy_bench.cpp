// The policy alone, without a simulator: one round of ata-auto is allocate() plus observe() of
// every task it gave, with task times drawn in advance (the paper's sqrt law). "warm": a
// policy that has run for 20,000 rounds; "fresh": the first 1,000 rounds of a new policy
// (unseen workers, exploration), averaged. "Plan": ata-auto choosing its plans
// (Options::race = fungible): plan() and, when it races, a fungible race played on the same
// times (racers back to back until B results, the running copies censored).
//   ./build/bench/ata_bench_policy --benchmark_min_time=1
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <utility>
#include <vector>

#include "ata/core/ata_auto_policy.hpp"

namespace {

constexpr std::size_t kBatch = 23;
constexpr std::size_t kTimesPerWorker = 4096;

// Each worker's times, drawn once and replayed in a cycle.
class Times {
 public:
  explicit Times(std::size_t workers) : times_(workers), used_(workers, 0) {
    std::mt19937_64 rng(1);
    for (std::size_t i = 0; i < workers; ++i) {
      const double mean = 58.0 * std::sqrt(static_cast<double>(i + 1));
      std::exponential_distribution<double> tail(2.0 / mean);
      times_[i].resize(kTimesPerWorker);
      for (double& t : times_[i]) t = mean / 2.0 + tail(rng);
    }
  }
  double next(std::size_t worker) { return times_[worker][used_[worker]++ % kTimesPerWorker]; }

 private:
  std::vector<std::vector<double>> times_;
  std::vector<std::size_t> used_;
};

void play(ata::AtaAutoPolicy& policy, Times& times, ata::Allocation& a) {
  policy.allocate(kBatch, a);
  for (std::size_t i = 0; i < a.size(); ++i) {
    for (std::size_t t = 0; t < a[i]; ++t) policy.observe(i, times.next(i));
  }
}

// One round of a policy that plans: quotas as in play(), a race as an event loop.
class PlanPlayer {
 public:
  void play(ata::AtaAutoPolicy& policy, Times& times) {
    policy.plan(kBatch, plan_);
    if (plan_.racers().empty()) {
      for (std::size_t i = 0; i < plan_.workers(); ++i) {
        for (std::size_t t = 0; t < plan_.quotas()[i]; ++t) policy.observe(i, times.next(i));
      }
      return;
    }
    running_.clear();
    for (const std::size_t i : plan_.racers()) running_.push_back({times.next(i), i});
    std::make_heap(running_.begin(), running_.end(), std::greater<>{});
    std::vector<double>& started = started_;
    started.assign(plan_.workers(), 0.0);
    double now = 0.0;
    for (std::size_t results = 0; results < kBatch; ++results) {
      std::pop_heap(running_.begin(), running_.end(), std::greater<>{});
      const auto [end, i] = running_.back();
      now = end;
      policy.observe(i, end - started[i]);
      started[i] = end;
      running_.back() = {end + times.next(i), i};
      std::push_heap(running_.begin(), running_.end(), std::greater<>{});
    }
    for (const auto& [end, i] : running_) {
      if (now > started[i]) policy.observe_censored(i, now - started[i]);
    }
  }

 private:
  ata::Plan plan_;
  std::vector<std::pair<double, std::size_t>> running_;
  std::vector<double> started_;
};

ata::AtaAutoPolicy::Options planning(std::uint64_t seed) {
  return ata::AtaAutoPolicy::Options{}.set_seed(seed).set_race(ata::RaceKind::fungible);
}

void BM_AtaAutoPlanRound_Warm(benchmark::State& state) {
  const auto workers = static_cast<std::size_t>(state.range(0));
  Times times(workers);
  ata::AtaAutoPolicy policy(workers, planning(1));
  PlanPlayer player;
  for (int k = 0; k < 20000; ++k) player.play(policy, times);
  for (auto _ : state) player.play(policy, times);
  state.counters["racers"] = static_cast<double>(policy.chosen_racers());
}

void BM_AtaAutoPlanRound_Fresh(benchmark::State& state) {
  const auto workers = static_cast<std::size_t>(state.range(0));
  Times times(workers);
  PlanPlayer player;
  std::uint64_t seed = 1;
  std::size_t evaluations = 0;
  for (auto _ : state) {
    state.PauseTiming();
    ata::AtaAutoPolicy policy(workers, planning(seed++));
    state.ResumeTiming();
    for (int k = 0; k < 1000; ++k) player.play(policy, times);
    evaluations += policy.evaluations();
  }
  state.counters["per round"] =
      benchmark::Counter(1000.0 * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["evaluations"] =
      static_cast<double>(evaluations) / static_cast<double>(state.iterations());
}

void BM_AtaAutoRound_Warm(benchmark::State& state) {
  const auto workers = static_cast<std::size_t>(state.range(0));
  Times times(workers);
  ata::AtaAutoPolicy policy(workers, ata::AtaAutoPolicy::Options{}.set_seed(1));
  ata::Allocation a;
  for (int k = 0; k < 20000; ++k) play(policy, times, a);
  for (auto _ : state) play(policy, times, a);
}

void BM_AtaAutoRound_Fresh(benchmark::State& state) {
  const auto workers = static_cast<std::size_t>(state.range(0));
  Times times(workers);
  ata::Allocation a;
  std::uint64_t seed = 1;
  for (auto _ : state) {
    state.PauseTiming();
    ata::AtaAutoPolicy policy(workers, ata::AtaAutoPolicy::Options{}.set_seed(seed++));
    state.ResumeTiming();
    for (int k = 0; k < 1000; ++k) play(policy, times, a);
  }
  state.counters["per round"] =
      benchmark::Counter(1000.0 * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

}  // namespace

BENCHMARK(BM_AtaAutoRound_Warm)->Arg(51)->Arg(459);
BENCHMARK(BM_AtaAutoRound_Fresh)->Arg(459)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AtaAutoPlanRound_Warm)->Arg(51)->Arg(459);
BENCHMARK(BM_AtaAutoPlanRound_Fresh)->Arg(459)->Unit(benchmark::kMillisecond);

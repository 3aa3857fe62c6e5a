#include "core/plan_evaluator.hpp"

#include <algorithm>
#include <bit>
#include <functional>

#include "core/normal_sampler.hpp"

namespace ata::detail {

namespace {
// Odd constants that spread (evaluation, round, worker, task) over the generator's state.
constexpr std::uint64_t kPerEvaluation = 0x9e3779b97f4a7c15ULL;
constexpr std::uint64_t kPerRound = 0xbf58476d1ce4e5b9ULL;
constexpr std::uint64_t kPerWorker = 0x94d049bb133111ebULL;
constexpr std::uint64_t kPerTask = 0xd6e8feb86659fd93ULL;
}  // namespace

double PlanEvaluator::ratio(std::size_t round, std::size_t worker, std::size_t task) const noexcept {
  std::uint64_t state = seed_ + evaluation_ * kPerEvaluation + round * kPerRound +
                        worker * kPerWorker + task * kPerTask;
  const std::uint64_t bits = splitmix64(state);
  return ratios_[(bits >> 11) % ratios_.size()] * ratio_scale_;
}

PlanEstimate PlanEvaluator::quotas(std::span<const double> means,
                                   std::span<const std::size_t> tasks, double price) {
  double wall = 0.0;
  double work = 0.0;
  for (std::size_t r = 0; r < rounds_; ++r) {
    double longest = 0.0;
    for (std::size_t j = 0; j < means.size(); ++j) {
      double sum = 0.0;
      for (std::size_t t = 0; t < tasks[j]; ++t) sum += ratio(r, j, t);
      sum *= means[j];
      longest = std::max(longest, sum);
      work += sum;
      events_ += tasks[j];
    }
    wall += longest;
  }
  const auto rounds = static_cast<double>(rounds_);
  return {0, wall / rounds, work / rounds, (wall + price * work) / rounds};
}

PlanEstimate PlanEvaluator::race(std::span<const double> means, std::size_t racers,
                                 std::size_t batch, double price, RaceKind kind) {
  const auto later = std::greater<>{};
  double wall = 0.0;
  double work = 0.0;
  started_.assign(racers, 0);
  for (std::size_t r = 0; r < rounds_; ++r) {
    heap_.clear();
    std::fill(started_.begin(), started_.end(), 0);
    double busy = 0.0;  // indexed races: the copies' times
    std::size_t claimed = 0;
    for (std::size_t j = 0; j < racers && (kind == RaceKind::fungible || claimed < batch); ++j) {
      const double d = means[j] * ratio(r, j, started_[j]++);
      heap_.emplace_back(d, j);
      busy += d;
      ++claimed;
    }
    std::make_heap(heap_.begin(), heap_.end(), later);
    std::size_t results = 0;
    double end = 0.0;
    while (!heap_.empty()) {
      std::pop_heap(heap_.begin(), heap_.end(), later);
      const auto [at, j] = heap_.back();
      heap_.pop_back();
      end = at;
      if (++results == batch && kind == RaceKind::fungible) break;
      if (kind == RaceKind::indexed && claimed == batch) continue;
      const double d = means[j] * ratio(r, j, started_[j]++);
      heap_.emplace_back(at + d, j);
      std::push_heap(heap_.begin(), heap_.end(), later);
      busy += d;
      ++claimed;
    }
    // The round's cost: its starts (make_heap is linear) and a heap operation per result.
    events_ += racers + results * static_cast<std::size_t>(std::bit_width(racers));
    wall += end;
    work += kind == RaceKind::fungible ? static_cast<double>(racers) * end : busy;
  }
  const auto rounds = static_cast<double>(rounds_);
  return {racers, wall / rounds, work / rounds, (wall + price * work) / rounds};
}

PlanEstimate PlanEvaluator::choose(std::span<const double> means,
                                   std::span<const std::size_t> quotas_per_worker,
                                   std::span<const double> ratios, std::size_t batch,
                                   double price, RaceKind kind, std::size_t around) {
  ++evaluation_;
  events_ = 0;
  ratios_ = ratios;
  double total = 0.0;
  for (const double r : ratios) total += r;
  ratio_scale_ = static_cast<double>(ratios.size()) / total;
  // A round's wall is its B-th result, whose relative spread shrinks as 1 / sqrt(B): as many
  // rounds as keep rounds x B about constant.
  rounds_ = std::clamp(kTasks / batch, kMinRounds, kMaxRounds);
  estimates_.clear();
  estimates_.push_back(quotas(means, quotas_per_worker, price));
  const std::size_t n = means.size();
  const auto tried = [&](std::size_t m) {
    return std::any_of(estimates_.begin(), estimates_.end(),
                       [m](const PlanEstimate& e) { return e.racers == m; });
  };
  const auto try_race = [&](std::size_t m) {
    if (!tried(m)) estimates_.push_back(race(means, m, batch, price, kind));
  };
  if (around > 0) {  // a local step: the race played and its neighbours
    const std::size_t m = std::min(around, n);
    const std::size_t step = std::max<std::size_t>(1, m / 8);
    try_race(m);
    try_race(std::max<std::size_t>(1, m - std::min(step, m - 1)));
    try_race(std::min(n, m + step));
  } else {
    for (std::size_t m = 1; m < n; m *= 2) try_race(m);
    try_race(n);
    std::size_t grid_best = 0;
    double value = 0.0;
    for (const PlanEstimate& e : estimates_) {
      if (e.racers > 0 && (grid_best == 0 || e.objective < value)) {
        grid_best = e.racers;
        value = e.objective;
      }
    }
    const std::size_t step = std::max<std::size_t>(1, grid_best / 8);
    for (std::size_t m = std::max<std::size_t>(1, grid_best / 2); m <= std::min(n, 2 * grid_best);
         m += step) {
      try_race(m);
    }
  }
  // The quotas come first: a strict comparison leaves ties to them, then to the race tried first.
  const PlanEstimate* best = &estimates_.front();
  for (const PlanEstimate& e : estimates_) {
    if (e.objective < best->objective) best = &e;
  }
  return *best;
}

}  // namespace ata::detail

#include "core/round_time_allocator.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <numbers>
#include <numeric>

namespace ata::detail {

namespace {

// exp(-exp(-gamma)), gamma = 0.5772... (Euler-Mascheroni): the Gumbel law's CDF at its mean.
constexpr double kGumbelMeanLevel = 0.5703760182828;

// The quantile used for a sum of `tasks` times: see RoundTimeAllocator.
double level(double mean, double cv2, double tasks, double z) noexcept {
  const double a = tasks;
  const double h = cv2 / (9.0 * a);
  const double x = 1.0 - h + z * std::sqrt(h);
  return a * mean * std::max(x * x * x, 1.0);
}

}  // namespace

double normal_quantile(double p) noexcept {
  static constexpr std::array<double, 6> a{-3.969683028665376e+01, 2.209460984245205e+02,
                                           -2.759285104469687e+02, 1.383577518672690e+02,
                                           -3.066479806614716e+01, 2.506628277459239e+00};
  static constexpr std::array<double, 5> b{-5.447609879822406e+01, 1.615858368580409e+02,
                                           -1.556989798598866e+02, 6.680131188771972e+01,
                                           -1.328068155288572e+01};
  static constexpr std::array<double, 6> c{-7.784894002430293e-03, -3.223964580411365e-01,
                                           -2.400758277161838e+00, -2.549671010115819e+00,
                                           4.374664141464968e+00,  2.938163982698783e+00};
  static constexpr std::array<double, 4> d{7.784695709041462e-03, 3.224671290700398e-01,
                                           2.445134137142996e+00, 3.754408661907416e+00};
  constexpr double kLow = 0.02425;
  const auto tail = [&](double q) {
    return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
           ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0);
  };
  double x = 0.0;
  if (p < kLow) {
    x = tail(std::sqrt(-2.0 * std::log(p)));
  } else if (p > 1.0 - kLow) {
    x = -tail(std::sqrt(-2.0 * std::log1p(-p)));
  } else {
    const double q = p - 0.5;
    const double r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1.0);
  }
  // One step of Halley's method on Phi(x) = p: the approximation's ~1e-5 to full precision.
  const double error = 0.5 * std::erfc(-x / std::numbers::sqrt2) - p;
  const double u = error * std::sqrt(2.0 * std::numbers::pi) * std::exp(0.5 * x * x);
  return x - u / (1.0 + 0.5 * x * u);
}

double balanced_max_score(std::size_t m) noexcept {
  // 1 - 0.5704^(1/m) through expm1, so that large m keep their precision.
  const double upper = -std::expm1(std::log(kGumbelMeanLevel) / static_cast<double>(m));
  return -normal_quantile(upper);
}

double RoundTimeAllocator::score(std::size_t m) {
  if (m >= scores_.size()) {
    const std::size_t from = scores_.size();
    scores_.resize(m + 1);
    for (std::size_t j = std::max<std::size_t>(from, 2); j <= m; ++j)
      scores_[j] = balanced_max_score(j);
  }
  return scores_[m];
}

// One greedy pass with the score of m >= 2 workers: tasks one at a time to the smallest next
// level (+infinity at a cap). Returns the round time predicted with the number of workers
// actually used.
double RoundTimeAllocator::pass(std::size_t batch, std::size_t m, std::vector<std::size_t>& tasks) {
  const std::size_t c = means_.size();
  const double z = score(m);
  const auto next_level = [&](std::size_t j, std::size_t a) {
    return a > caps_[j] ? std::numeric_limits<double>::infinity()
                        : level(means_[j], cv2_[j], queued(j, a), z);
  };
  tasks.assign(c, 0);
  heap_.resize(c);
  for (std::size_t j = 0; j < c; ++j) heap_[j] = {next_level(j, 1), j};
  const auto later = std::greater<>();
  std::make_heap(heap_.begin(), heap_.end(), later);
  for (std::size_t t = 0; t < batch; ++t) {
    std::pop_heap(heap_.begin(), heap_.end(), later);
    const std::size_t j = heap_.back().second;
    ++tasks[j];
    heap_.back().first = next_level(j, tasks[j] + 1);
    std::push_heap(heap_.begin(), heap_.end(), later);
  }
  std::size_t used = 0;
  for (const std::size_t a : tasks) used += a > 0;
  const double z_used = used >= 2 ? score(used) : 0.0;
  double worst = 0.0;
  for (std::size_t j = 0; j < c; ++j) {
    if (tasks[j] == 0) continue;
    // One worker alone: the round time is its sum's mean.
    worst = std::max(worst, used >= 2 ? level(means_[j], cv2_[j], queued(j, tasks[j]), z_used)
                                      : queued(j, tasks[j]) * means_[j]);
  }
  return worst;
}

double RoundTimeAllocator::solve(std::span<const double> means, std::span<const double> cv2,
                                 std::span<const std::size_t> caps, std::size_t batch,
                                 std::vector<std::size_t>& tasks, std::span<const double> backlog) {
  return allocate(means, cv2, caps, batch, tasks, backlog, true);
}

double RoundTimeAllocator::allocate(std::span<const double> means, std::span<const double> cv2,
                                    std::span<const std::size_t> caps, std::size_t batch,
                                    std::vector<std::size_t>& tasks,
                                    std::span<const double> backlog, bool alone) {
  const std::size_t c = means.size();
  means_ = means;
  cv2_ = cv2;
  backlog_ = backlog;
  std::size_t room = 0;
  for (const std::size_t cap : caps) room += std::min(cap, batch);
  unlimited_.assign(c, batch);
  caps_ = room >= batch ? caps : std::span<const std::size_t>(unlimited_);
  const std::size_t most = std::min(batch, c);
  // The fastest worker alone, if its cap allows: the only choice with one candidate.
  double best = std::numeric_limits<double>::infinity();
  std::size_t fastest = c;
  for (std::size_t j = 0; j < c; ++j) {
    if (caps_[j] >= batch &&
        (fastest == c || queued(j, batch) * means[j] < queued(fastest, batch) * means[fastest])) {
      fastest = j;
    }
  }
  if (fastest < c && (alone || most < 2)) {
    tasks.assign(c, 0);
    tasks[fastest] = batch;
    best = queued(fastest, batch) * means[fastest];
  }
  if (most < 2) return best;
  // Otherwise m is a fixed point: the number of workers used by the pass with m's score. Start
  // from the last call's m; keep the best of at most three passes.
  std::size_t m = last_m_ >= 2 ? std::min(last_m_, most) : most;
  for (int attempt = 0; attempt < 3; ++attempt) {
    const double predicted = pass(batch, m, trial_);
    std::size_t used = 0;
    for (const std::size_t a : trial_) used += a > 0;
    if (predicted < best) {
      best = predicted;
      tasks = trial_;
      last_m_ = used;
    }
    if (used == m || used < 2) break;
    m = used;
  }
  return best;
}

// Allocates over the u fastest candidates only (order_ must be set) into restricted_.
double RoundTimeAllocator::restricted(std::size_t u, std::span<const double> means,
                                      std::span<const double> cv2,
                                      std::span<const std::size_t> caps, std::size_t batch) {
  sub_means_.resize(u);
  sub_cv2_.resize(u);
  sub_caps_.resize(u);
  for (std::size_t q = 0; q < u; ++q) {
    sub_means_[q] = means[order_[q]];
    sub_cv2_[q] = cv2[order_[q]];
    sub_caps_[q] = caps[order_[q]];
  }
  const std::size_t saved_m = last_m_;  // a restricted solve must not move the full one's start
  const double predicted = allocate(sub_means_, sub_cv2_, sub_caps_, batch, sub_tasks_, {}, u < 2);
  last_m_ = saved_m;
  restricted_.assign(means.size(), 0);
  for (std::size_t q = 0; q < u; ++q) restricted_[order_[q]] = sub_tasks_[q];
  return predicted;
}

double RoundTimeAllocator::solve_with_shape(std::span<const double> means,
                                            std::span<const double> cv2,
                                            std::span<const std::size_t> caps,
                                            std::span<const double> estimates, std::size_t batch,
                                            std::vector<std::size_t>& tasks, TaskTimeShape& shape) {
  const std::size_t c = means.size();
  // Candidates in the order the quantile rule takes them: by the level of a first task (a
  // dispersed worker after a steady one of nearly the same mean), ties by index.
  const double z = score(std::max<std::size_t>(last_m_, 2));
  first_level_.resize(c);
  for (std::size_t j = 0; j < c; ++j) first_level_[j] = level(means[j], cv2[j], 1.0, z);
  order_.resize(c);
  std::iota(order_.begin(), order_.end(), std::size_t{0});
  std::stable_sort(order_.begin(), order_.end(),
                   [&](std::size_t x, std::size_t y) { return first_level_[x] < first_level_[y]; });
  const bool compare = calls_++ % kCompareEvery == 0;
  // Between comparisons: the count chosen last, over this call's fastest candidates.
  // A restriction must leave room for the batch within the caps (which the rule would
  // otherwise ignore, and give a worker seen twice a dozen tasks).
  const auto fits = [&](std::size_t u) {
    std::size_t room = 0;
    for (std::size_t q = 0; q < u && room < batch; ++q) room += std::min(caps[order_[q]], batch);
    return room >= batch;
  };
  if (!compare && last_used_ > 0 && last_used_ < std::min(last_full_used_, c) && fits(last_used_)) {
    const double predicted = restricted(last_used_, means, cv2, caps, batch);
    tasks = restricted_;
    return predicted;
  }
  const double full = allocate(means, cv2, caps, batch, tasks, {}, false);
  const std::size_t used = static_cast<std::size_t>(
      std::count_if(tasks.begin(), tasks.end(), [](std::size_t a) { return a > 0; }));
  last_full_used_ = used;
  if (used < 2 || !compare) return full;
  const std::size_t target = last_used_ == 0 ? used : std::min(last_used_, used);
  const std::size_t neighbour = below_next_ ? target - 1 : target + 1;
  below_next_ = !below_next_;
  double best = std::numeric_limits<double>::infinity();
  double predicted = full;
  std::size_t chosen = used;
  best_tasks_ = tasks;
  // And a scout that visits every smaller count in turn, 1 (the fastest alone) included: the
  // expected round time is not unimodal in the count (the rule's allocations jump as workers
  // join), and steps of one stop at the first local minimum.
  scout_ = scout_ + 1 < used ? scout_ + 1 : 1;
  const std::size_t scout = scout_ == target || scout_ == neighbour ? 0 : scout_;
  for (const std::size_t u : {target, neighbour, scout}) {
    if (u == 0) continue;
    double u_predicted = full;
    if (u >= used) {
      restricted_ = tasks;
    } else if (!fits(u)) {
      continue;
    } else {
      u_predicted = restricted(u, means, cv2, caps, batch);
    }
    terms_.clear();
    for (std::size_t j = 0; j < c; ++j) {
      if (restricted_[j] > 0) terms_.push_back({estimates[j], restricted_[j]});
    }
    const double e = shape.expected_max(terms_);
    if (e < best) {
      best = e;
      best_tasks_ = restricted_;
      predicted = u_predicted;
      chosen = std::min(u, used);
    }
  }
  tasks = best_tasks_;
  last_used_ = chosen;
  return predicted;
}

}  // namespace ata::detail

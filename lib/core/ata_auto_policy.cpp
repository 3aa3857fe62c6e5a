#include "ata/core/ata_auto_policy.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>

#include "ata/core/error.hpp"
#include "core/checks.hpp"
#include "core/normal_sampler.hpp"

namespace ata {

namespace {

// Prior of the pooled statistics, worth this many degrees of freedom: cv 1 (exponential times)
// and a log-time variance of 1, overruled by the data within the first rounds.
constexpr double kPriorDof = 2.0;
constexpr double kPriorCv2 = 1.0;
constexpr double kPriorLogVariance = 1.0;
// A worker's own cv (and log-time variance) is shrunk towards the pooled one with this weight:
// with few samples the pool decides, with many the worker's own data.
constexpr double kShrinkDof = 10.0;
// The change test: suffixes of the last 4, 8 and 16 times; log-times clipped at 3 standard
// deviations so that one huge time (heavy tail, outage) moves the statistic by 3 at most.
constexpr std::array<std::size_t, 3> kSuffixes{4, 8, 16};
constexpr double kClip = 3.0;
// Posterior draws: a worker this many standard deviations above the current candidates is
// drawn through the normal's tail beyond kFar (probability far_tail()) instead of a full draw.
constexpr double kFar = 4.0;
// centre_ of a worker never observed: skipped by the draws.
constexpr double kUnseen = std::numeric_limits<double>::infinity();
double far_tail() {
  static const double p = 0.5 * std::erfc(kFar / std::sqrt(2.0));
  return p;
}
// Zero durations are floored at this fraction of the worker's mean before taking logarithms.
constexpr double kLogFloor = 1e-6;

// Mixes the seed so that seeds 0, 1, 2, ... start far apart in SplitMix64's sequence.
std::uint64_t initial_state(std::uint64_t seed) noexcept {
  std::uint64_t s = seed ^ 0x6a09e667f3bcc909ULL;
  return detail::splitmix64(s);
}

AtaAutoPolicy::Options checked(const AtaAutoPolicy::Options& o) {
  detail::require_positive(o.exploration, "ata-auto exploration");
  if (std::isnan(o.change_threshold) || o.change_threshold <= 0.0) {
    throw InvalidArgument("ata-auto change_threshold must be > 0 (+inf turns the test off), got " +
                          detail::to_text(o.change_threshold));
  }
  return o;
}

}  // namespace

AtaAutoPolicy::AtaAutoPolicy(std::size_t workers, const Options& options)
    : Policy(workers),
      options_(checked(options)),
      workers_(workers),
      ring_(workers * kWindow, 0.0),
      log_ring_(workers * kWindow, 0.0),
      centre_(workers, kUnseen),
      pool_weight_(workers, 0.0),
      own_(workers, 0.0),
      stale_(workers, 0),
      unseen_(workers),
      random_state_(initial_state(options.seed)) {}

AtaAutoPolicy::AtaAutoPolicy(std::size_t workers) : AtaAutoPolicy(workers, Options{}) {}

double AtaAutoPolicy::estimated_mean(std::size_t worker) const {
  detail::require_worker_index(worker, workers());
  return workers_[worker].mean;
}

std::size_t AtaAutoPolicy::estimated_samples(std::size_t worker) const {
  detail::require_worker_index(worker, workers());
  return workers_[worker].count;
}

double AtaAutoPolicy::pooled_cv2() const noexcept {
  return (kPriorDof * kPriorCv2 + pool_relative_m2_) / (kPriorDof + pool_dof_);
}

double AtaAutoPolicy::pooled_cv() const noexcept { return std::sqrt(pooled_cv2()); }

double AtaAutoPolicy::pooled_log_variance() const noexcept {
  return (kPriorDof * kPriorLogVariance + pool_log_m2_) / (kPriorDof + pool_dof_);
}

// A worker joins the pool with two samples and a positive mean (zero times carry no scale).
void AtaAutoPolicy::pool_remove(std::size_t worker) {
  const Worker& w = workers_[worker];
  if (w.count < 2 || w.mean <= 0.0) return;
  pool_relative_m2_ -= w.relative_m2;
  pool_log_m2_ -= w.log_m2;
  pool_dof_ -= static_cast<double>(w.count - 1);
}

void AtaAutoPolicy::pool_add(std::size_t worker) {
  Worker& w = workers_[worker];
  if (w.count < 2 || w.mean <= 0.0) return;
  w.relative_m2 = w.m2 / (w.mean * w.mean);
  pool_relative_m2_ += w.relative_m2;
  pool_log_m2_ += w.log_m2;
  pool_dof_ += static_cast<double>(w.count - 1);
}

void AtaAutoPolicy::add(std::size_t worker, double seconds, double log_seconds) {
  Worker& w = workers_[worker];
  ring_[worker * kWindow + w.count % kWindow] = seconds;
  log_ring_[worker * kWindow + w.count % kWindow] = log_seconds;
  ++w.count;
  const double inverse_k = 1.0 / static_cast<double>(w.count);
  const double delta = seconds - w.mean;
  w.mean += delta * inverse_k;
  w.m2 += delta * (seconds - w.mean);
  const double log_delta = log_seconds - w.log_mean;
  w.log_mean += log_delta * inverse_k;
  w.log_m2 += log_delta * (log_seconds - w.log_mean);
  stale_[worker] = 1;
}

// The posterior variance of log mu_i is c^2 cv_i^2 / K_i, cv_i^2 = (s pool + r_i) / (s + K_i - 1)
// with r_i = m2_i / mean_i^2 and s = kShrinkDof: the pooled cv^2 alone while K_i = 1.
void AtaAutoPolicy::refresh(std::size_t worker) {
  const Worker& w = workers_[worker];
  const double k = static_cast<double>(w.count);
  const double scale2 = options_.exploration * options_.exploration;
  centre_[worker] = std::log(w.mean);  // -inf for a mean of 0: drawn as 0, the fastest possible
  if (w.count >= 2 && w.mean > 0.0) {
    const double per = scale2 / ((kShrinkDof + k - 1.0) * k);
    pool_weight_[worker] = kShrinkDof * per;
    own_[worker] = w.relative_m2 * per;
  } else {
    pool_weight_[worker] = scale2 / k;
    own_[worker] = 0.0;
  }
  stale_[worker] = 0;
}

void AtaAutoPolicy::learn(std::size_t worker, double seconds) {
  Worker& w = workers_[worker];
  if (w.count == 0) --unseen_;
  // Floored relative to the mean with this sample, so that zero times have a finite logarithm.
  const double k = static_cast<double>(w.count);
  const double scale = (w.mean * k + seconds) / (k + 1.0);
  const double log_seconds =
      std::log(std::max({seconds, kLogFloor * scale, std::numeric_limits<double>::min()}));
  pool_remove(worker);
  add(worker, seconds, log_seconds);
  pool_add(worker);
  if (options_.change_threshold < std::numeric_limits<double>::infinity()) test_for_change(worker);
}

// Compares the last m log-times (m = 4, 8, 16) with the worker's older ones: the sum of their
// deviations from the older mean, each clipped at kClip older standard deviations, divided by its
// standard error. Under no change a deviation beyond the threshold (6 by default) is extremely
// rare even for heavy-tailed times, because the clipping bounds every term; a tenfold slowdown
// (log-shift 2.3, several standard deviations of typical task times) trips it within 4-8 tasks.
void AtaAutoPolicy::test_for_change(std::size_t worker) {
  const Worker& w = workers_[worker];
  const double* logs = &log_ring_[worker * kWindow];
  const double total = w.log_mean * static_cast<double>(w.count);
  const double total_squares = w.log_m2 + w.log_mean * total;
  const double pooled = pooled_log_variance();
  double suffix_sum = 0.0;
  double suffix_squares = 0.0;
  std::size_t taken = 0;
  for (const std::size_t m : kSuffixes) {
    if (2 * m > w.count) return;  // needs m recent times and at least m older ones
    for (; taken < m; ++taken) {
      const double l = logs[(w.count - 1 - taken) % kWindow];
      suffix_sum += l;
      suffix_squares += l * l;
    }
    // Suffix m is tested every m/2 observations: a change shows in the suffix for m tasks, so
    // this delays an alarm by at most m/2 - 1 tasks and makes a test every ~1.1 observations.
    if (w.count % (m / 2) != 0) continue;
    const double older = static_cast<double>(w.count - m);
    const double older_mean = (total - suffix_sum) / older;  // older >= m >= 4
    const double older_m2 =
        std::max(total_squares - suffix_squares - older_mean * (total - suffix_sum), 0.0);
    const double variance = (kShrinkDof * pooled + older_m2) / (kShrinkDof + older - 1.0);
    const double sd = std::sqrt(variance);
    if (!(sd > 0.0)) continue;
    const double cap = kClip * sd;
    double clipped = 0.0;
    for (std::size_t j = 0; j < m; ++j) {
      clipped += std::clamp(logs[(w.count - 1 - j) % kWindow] - older_mean, -cap, cap);
    }
    // |clipped| / standard error > z, squared: the standard error is sd sqrt(m (1 + m / older)).
    const double md = static_cast<double>(m);
    const double threshold2 = options_.change_threshold * options_.change_threshold;
    if (clipped * clipped > threshold2 * variance * md * (1.0 + md / older)) {
      restart(worker, m);
      return;
    }
  }
}

// Restarts the worker's statistics from its last `keep` times (the new regime).
void AtaAutoPolicy::restart(std::size_t worker, std::size_t keep) {
  Worker& w = workers_[worker];
  std::array<double, kWindow> times{};
  std::array<double, kWindow> logs{};
  for (std::size_t j = 0; j < keep; ++j) {
    const std::size_t at = worker * kWindow + (w.count - keep + j) % kWindow;
    times[j] = ring_[at];
    logs[j] = log_ring_[at];
  }
  pool_remove(worker);
  w = Worker{};
  for (std::size_t j = 0; j < keep; ++j) add(worker, times[j], logs[j]);
  pool_add(worker);
  ++changes_detected_;
}

void AtaAutoPolicy::choose(std::size_t batch, Allocation& out) {
  const std::size_t n = workers();
  std::size_t left = batch;
  if (unseen_ > 0) {
    unseen_list_.clear();
    for (std::size_t i = 0; i < n; ++i) {
      if (workers_[i].count == 0) unseen_list_.push_back(i);
    }
    const std::size_t tried = std::min(left, unseen_list_.size());
    for (std::size_t j = 0; j < tried; ++j) out.add(unseen_list_[j]);
    left -= tried;
    if (left == 0) return;
    if (unseen_list_.size() == n) {  // nothing observed yet and B > n: spread the rest
      spread_.spread(unseen_list_, left, out);
      return;
    }
  }

  // Posterior draws in log space; only the m = min(left, seen) smallest can get a task, so they
  // are kept in a bounded max-heap of (draw, index), and only they are exponentiated.
  const std::size_t seen = n - unseen_;
  const std::size_t m = std::min(left, seen);
  const double pool = pooled_cv2();
  const double far2 = kFar * kFar;
  const double tail = far_tail();
  std::uint64_t state = random_state_;  // a local copy: the loop's stores cannot alias it
  heap_.clear();
  double worst = std::numeric_limits<double>::infinity();  // the m-th smallest draw so far
  for (std::size_t i = 0; i < n; ++i) {
    if (stale_[i]) refresh(i);
    const double centre = centre_[i];
    if (centre == kUnseen) continue;
    const double variance = pool_weight_[i] * pool + own_[i];
    const double gap = centre - worst;
    double z = 0.0;
    if (gap > 0.0 && gap * gap > far2 * variance) {
      // More than kFar standard deviations above the m-th smallest draw so far: it can only
      // enter when z < -kFar. Decide that with one uniform, and draw z from the normal's tail
      // below -kFar when it happens. Exact, and it spares most workers the full draw.
      if (detail::uniform_open(state) >= tail) continue;
      z = -detail::normal_tail(state, kFar);
    } else {
      z = detail::standard_normal(state);
    }
    const double draw = centre + std::sqrt(variance) * z;
    if (heap_.size() < m) {
      heap_.emplace_back(draw, i);
      std::push_heap(heap_.begin(), heap_.end());
      if (heap_.size() == m) worst = heap_.front().first;
    } else if (draw < worst) {
      std::pop_heap(heap_.begin(), heap_.end());
      heap_.back() = {draw, i};
      std::push_heap(heap_.begin(), heap_.end());
      worst = heap_.front().first;
    }
  }
  random_state_ = state;
  // Candidates in index order, so that the solver's ties break by the lowest worker index.
  std::sort(heap_.begin(), heap_.end(),
            [](const auto& a, const auto& b) { return a.second < b.second; });
  candidate_scores_.resize(heap_.size());
  for (std::size_t j = 0; j < heap_.size(); ++j) candidate_scores_[j] = std::exp(heap_[j].first);
  solver_.solve(candidate_scores_, left, candidate_allocation_);
  for (std::size_t j = 0; j < heap_.size(); ++j) {
    if (candidate_allocation_[j] > 0) out.add(heap_[j].second, candidate_allocation_[j]);
  }
}

}  // namespace ata

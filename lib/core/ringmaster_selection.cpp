#include "ata/core/ringmaster_selection.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "ata/core/ata_auto_policy.hpp"
#include "ata/core/error.hpp"
#include "core/checks.hpp"

namespace ata {

namespace {

void require_threshold(std::size_t threshold) {
  if (threshold == 0) throw InvalidArgument("Ringmaster's delay threshold R must be >= 1, got 0");
}

void require_slack(double slack) { detail::require_non_negative(slack, "Ringmaster's bound slack"); }

}  // namespace

double ringmaster_time_bound(std::span<const double> sorted_means, std::size_t m,
                             std::size_t threshold) {
  require_threshold(threshold);
  if (m == 0 || m > sorted_means.size()) {
    throw InvalidArgument("Ringmaster's bound needs 1 <= m <= " +
                          std::to_string(sorted_means.size()) + " workers, got m = " +
                          std::to_string(m));
  }
  double rate = 0.0;
  for (std::size_t i = 0; i < m; ++i) {
    detail::require_positive(sorted_means[i], "a worker's mean task time");
    rate += 1.0 / sorted_means[i];
  }
  return static_cast<double>(threshold + m) / rate;
}

std::vector<std::size_t> ringmaster_fastest(std::span<const double> means, std::size_t threshold,
                                            double bound_slack) {
  require_threshold(threshold);
  require_slack(bound_slack);
  if (means.empty()) throw InvalidArgument("Ringmaster's selection needs at least one worker");
  for (const double mean : means) detail::require_positive(mean, "a worker's mean task time");
  std::vector<std::size_t> order(means.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return means[a] < means[b]; });
  // t(m) = (R + m) / S_m falls while the next worker's mean is below t(m) (adding worker m + 1
  // helps iff tau_{m+1} < t(m)), and t(m) is unimodal in m: past the minimiser `best` is the
  // least, and the scan stops at the first m beyond the slack (at the first rise without one).
  double rate = 0.0;
  double best = 0.0;
  std::size_t minimiser = 0;
  std::size_t chosen = 0;
  for (std::size_t m = 1; m <= order.size(); ++m) {
    rate += 1.0 / means[order[m - 1]];
    const double bound = static_cast<double>(threshold + m) / rate;
    if (minimiser == 0 || bound < best) {
      best = bound;
      minimiser = m;
    } else if (!(bound_slack > 0.0 && bound <= (1.0 + bound_slack) * best)) {
      break;
    }
    chosen = m;
  }
  order.resize(chosen);
  std::sort(order.begin(), order.end());
  return order;
}

RingmasterSelection::RingmasterSelection(std::size_t workers, std::size_t threshold,
                                         const Options& options)
    : threshold_(threshold), options_(options), probing_(workers) {
  if (workers == 0) throw InvalidArgument("Ringmaster's selection needs at least one worker, got 0");
  require_threshold(threshold);
  if (!(options.exploration_budget >= 0.0 && options.exploration_budget < 1.0)) {
    throw InvalidArgument("exploration budget must be in [0, 1), got " +
                          detail::to_text(options.exploration_budget));
  }
  detail::require_positive(options.censored_alarm, "censored-time alarm");
  detail::require_positive(options.censored_evidence, "censored-time evidence");
  require_slack(options.bound_slack);
  learner_ = std::make_unique<AtaAutoPolicy>(
      workers, AtaAutoPolicy::Options{}.set_change_threshold(options.change_threshold));
  censored_only_.assign(workers, 0.0);
  censored_since_.assign(workers, 0.0);
  alarmed_.assign(workers, 0);
  last_seen_.assign(workers, 0);
  is_selected_.assign(workers, 0);
}

RingmasterSelection::RingmasterSelection(std::size_t workers, std::size_t threshold)
    : RingmasterSelection(workers, threshold, Options{}) {}

RingmasterSelection::~RingmasterSelection() = default;
RingmasterSelection::RingmasterSelection(RingmasterSelection&&) noexcept = default;
RingmasterSelection& RingmasterSelection::operator=(RingmasterSelection&&) noexcept = default;

void RingmasterSelection::observe(std::size_t worker, double seconds, Outcome outcome) {
  detail::require_worker_index(worker, workers());
  if (outcome == Outcome::complete) {
    learner_->observe(worker, seconds);  // validates seconds
    censored_only_[worker] = 0.0;
    censored_since_[worker] = 0.0;
    alarmed_[worker] = 0;
  } else if (learner_->estimated_samples(worker) == 0) {
    detail::require_non_negative(seconds, "censored duration");
    censored_only_[worker] += seconds;
  } else {
    learner_->observe_censored(worker, seconds);
    censored_since_[worker] += seconds;
    if (alarmed_[worker] == 0 &&
        censored_since_[worker] > options_.censored_alarm * learner_->estimated_mean(worker)) {
      alarmed_[worker] = 1;
      ++censored_alarms_;
    }
  }
  last_seen_[worker] = ++observations_;
  credit_ += options_.exploration_budget * seconds;
  if (worker == probing_) probing_ = workers();
  stale_ = true;
}

double RingmasterSelection::estimated_mean(std::size_t worker) const {
  detail::require_worker_index(worker, workers());
  if (last_seen_[worker] == 0) return 0.0;
  if (alarmed_[worker] != 0) return censored_since_[worker] / options_.censored_evidence;
  if (learner_->estimated_samples(worker) > 0) return learner_->estimated_mean(worker);
  return censored_only_[worker] / options_.censored_evidence;
}

std::optional<std::size_t> RingmasterSelection::probing() const noexcept {
  if (probing_ == workers()) return std::nullopt;
  return probing_;
}

std::size_t RingmasterSelection::changes_detected() const noexcept {
  return learner_->changes_detected();
}

bool RingmasterSelection::selected(std::size_t worker) const {
  detail::require_worker_index(worker, workers());
  return is_selected_[worker] != 0;
}

std::span<const std::size_t> RingmasterSelection::select() {
  if (stale_) recompute();
  return selected_;
}

void RingmasterSelection::recompute() {
  stale_ = false;
  const std::size_t n = workers();
  known_.clear();
  means_.clear();
  std::fill(is_selected_.begin(), is_selected_.end(), 0);
  for (std::size_t i = 0; i < n; ++i) {
    const double mean = estimated_mean(i);
    if (mean > 0.0) {
      known_.push_back(i);
      means_.push_back(mean);
    } else {
      is_selected_[i] = 1;  // never observed, or observed at 0 s: it must run (again)
    }
  }
  if (!known_.empty()) {
    for (const std::size_t j : ringmaster_fastest(means_, threshold_, options_.bound_slack)) {
      is_selected_[known_[j]] = 1;
    }
  }
  if (probing_ == n) {  // the idle worker observed least recently, once the credit covers it
    std::size_t oldest = n;
    for (const std::size_t i : known_) {
      if (is_selected_[i] == 0 && (oldest == n || last_seen_[i] < last_seen_[oldest])) oldest = i;
    }
    if (oldest < n && credit_ >= estimated_mean(oldest)) {
      credit_ -= estimated_mean(oldest);
      probing_ = oldest;
      ++probes_;
    }
  }
  if (probing_ < n) is_selected_[probing_] = 1;
  selected_.clear();
  for (std::size_t i = 0; i < n; ++i) {
    if (is_selected_[i] != 0) selected_.push_back(i);
  }
}

}  // namespace ata

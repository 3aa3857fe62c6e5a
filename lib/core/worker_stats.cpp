#include "ata/core/worker_stats.hpp"

#include <cmath>

#include "core/checks.hpp"

namespace ata {

void WorkerStats::add(double seconds) {
  detail::require_non_negative(seconds, "duration");
  ++count_;
  const double delta = seconds - mean_;
  mean_ += delta / static_cast<double>(count_);
  m2_ += delta * (seconds - mean_);
  sum_ += seconds;
}

void WorkerStats::add_censored(double seconds) {
  detail::require_non_negative(seconds, "censored duration");
  ++censored_count_;
  censored_sum_ += seconds;
}

WorkerStats WorkerStats::from_moments(std::size_t count, double mean, double m2) {
  detail::require_non_negative(mean, "mean duration");
  detail::require_non_negative(m2, "sum of squared deviations");
  WorkerStats s;
  if (count == 0) return s;
  s.count_ = count;
  s.mean_ = mean;
  s.m2_ = count < 2 ? 0.0 : m2;
  s.sum_ = mean * static_cast<double>(count);
  return s;
}

void WorkerStats::merge(const WorkerStats& other) noexcept {
  censored_count_ += other.censored_count_;
  censored_sum_ += other.censored_sum_;
  if (other.count_ == 0) return;
  if (count_ == 0) {
    count_ = other.count_;
    mean_ = other.mean_;
    m2_ = other.m2_;
    sum_ = other.sum_;
    return;
  }
  const double n = static_cast<double>(count_);
  const double m = static_cast<double>(other.count_);
  const double total = n + m;
  const double delta = other.mean_ - mean_;
  count_ += other.count_;
  mean_ += delta * (m / total);
  m2_ += other.m2_ + delta * delta * (n * m / total);
  sum_ += other.sum_;
}

double WorkerStats::variance() const noexcept {
  return count_ < 2 ? 0.0 : m2_ / static_cast<double>(count_ - 1);
}

double WorkerStats::stddev() const noexcept { return std::sqrt(variance()); }

}  // namespace ata

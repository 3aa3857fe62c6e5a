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

void WorkerStats::add(double seconds, std::size_t times) {
  detail::require_non_negative(seconds, "duration");
  if (times == 0) return;
  WorkerStats same;
  same.count_ = times;
  same.mean_ = seconds;
  same.sum_ = seconds * static_cast<double>(times);
  merge(same);
}

void WorkerStats::merge(const WorkerStats& other) noexcept {
  if (other.count_ == 0) return;
  if (count_ == 0) {
    *this = other;
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

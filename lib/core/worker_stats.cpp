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

double WorkerStats::variance() const noexcept {
  return count_ < 2 ? 0.0 : m2_ / static_cast<double>(count_ - 1);
}

double WorkerStats::stddev() const noexcept { return std::sqrt(variance()); }

}  // namespace ata

#include "ata/core/confidence.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "ata/core/error.hpp"
#include "core/checks.hpp"

namespace ata {

double confidence_log(std::size_t round) {
  if (round < 1) throw InvalidArgument("round number must be >= 1 (rounds count from 1), got 0");
  const double k = static_cast<double>(round);
  return std::log(2.0 * k * k);
}

double confidence_width(std::size_t samples, std::size_t round) {
  const double log = confidence_log(round);
  if (samples == 0) return std::numeric_limits<double>::infinity();
  const double k = static_cast<double>(samples);
  return detail::width_from(std::sqrt(log), log, 1.0 / std::sqrt(k), 1.0 / k);
}

double ata_lower_bound(double mean, std::size_t samples, std::size_t round, double alpha) {
  detail::require_positive(alpha, "alpha");
  detail::require_non_negative(mean, "mean");
  const double width = confidence_width(samples, round);
  if (samples == 0) return 0.0;
  return std::max(mean - 2.0 * alpha * width, 0.0);
}

double ata_empirical_lower_bound(double mean, std::size_t samples, std::size_t round, double eta) {
  detail::require_positive(eta, "eta");
  detail::require_non_negative(mean, "mean");
  const double width = confidence_width(samples, round);
  if (samples == 0) return 0.0;
  return mean * std::max(1.0 - 2.0 * eta * width, 0.0);
}

}  // namespace ata

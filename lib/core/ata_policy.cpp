#include "ata/core/ata_policy.hpp"

#include <cmath>

#include "ata/core/confidence.hpp"
#include "core/checks.hpp"

namespace ata {

AtaPolicy::AtaPolicy(std::size_t workers, double alpha) : LowerBoundPolicy(workers), alpha_(alpha) {
  detail::require_positive(alpha, "alpha");
}

// With K_i = 0 the width is +inf, so the bound is max(-inf, 0) = 0: no branch needed.
void AtaPolicy::compute_scores(std::span<double> scores) const {
  const double log = confidence_log(round());
  const double sqrt_log = std::sqrt(log);
  const double two_alpha = 2.0 * alpha_;
  const auto mean = means();
  const auto inv_sqrt_k = inverse_sqrt_samples();
  const auto inv_k = inverse_samples();
  for (std::size_t i = 0; i < scores.size(); ++i) {
    const double bound =
        mean[i] - two_alpha * detail::width_from(sqrt_log, log, inv_sqrt_k[i], inv_k[i]);
    scores[i] = bound > 0.0 ? bound : 0.0;
  }
}

}  // namespace ata

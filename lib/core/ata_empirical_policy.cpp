#include "ata/core/ata_empirical_policy.hpp"

#include <cmath>

#include "ata/core/confidence.hpp"
#include "core/checks.hpp"

namespace ata {

AtaEmpiricalPolicy::AtaEmpiricalPolicy(std::size_t workers, double eta)
    : LowerBoundPolicy(workers), eta_(eta) {
  detail::require_positive(eta, "eta");
}

// With K_i = 0 the factor is max(-inf, 0) = 0 and the mean is 0: the score is 0.
void AtaEmpiricalPolicy::compute_scores(std::span<double> scores) const {
  const double log = confidence_log(round());
  const double sqrt_log = std::sqrt(log);
  const double two_eta = 2.0 * eta_;
  const auto mean = means();
  const auto inv_sqrt_k = inverse_sqrt_samples();
  const auto inv_k = inverse_samples();
  for (std::size_t i = 0; i < scores.size(); ++i) {
    const double factor = 1.0 - two_eta * detail::width_from(sqrt_log, log, inv_sqrt_k[i], inv_k[i]);
    scores[i] = factor > 0.0 ? mean[i] * factor : 0.0;
  }
}

}  // namespace ata

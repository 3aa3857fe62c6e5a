#pragma once
/// @file
/// Lower confidence bounds on a worker's mean task time, as ATA and ATA-Empirical use them.
///
/// With L = ln(2 k^2) (k the 1-based round) and K samples seen from the worker:
///   width(K, k)                = sqrt(L / K) + L / K
///   ATA score                  = max(mean - 2 alpha width, 0)
///   ATA-Empirical score        = mean * max(1 - 2 eta width, 0)
/// A worker with K = 0 has score 0 (it is tried before any other).

#include <cstddef>

namespace ata {

/// L = ln(2 k^2) for round k >= 1. Throws ata::InvalidArgument for k = 0.
[[nodiscard]] double confidence_log(std::size_t round);

/// sqrt(L/K) + L/K for K samples in round k; +infinity when K = 0.
[[nodiscard]] double confidence_width(std::size_t samples, std::size_t round);

/// ATA's lower confidence bound. Throws ata::InvalidArgument unless alpha is finite and > 0,
/// mean finite and >= 0 and round >= 1.
[[nodiscard]] double ata_lower_bound(double mean, std::size_t samples, std::size_t round,
                                     double alpha);

/// ATA-Empirical's lower confidence bound; same checks with eta in place of alpha.
[[nodiscard]] double ata_empirical_lower_bound(double mean, std::size_t samples, std::size_t round,
                                               double eta);

namespace detail {

// The one formula both the free functions and the policies' per-round loops evaluate.
// Takes sqrt(L), L, 1/sqrt(K) and 1/K (both +inf for K = 0) so that a round costs no sqrt.
inline double width_from(double sqrt_log, double log, double inv_sqrt_k, double inv_k) noexcept {
  return sqrt_log * inv_sqrt_k + log * inv_k;
}

}  // namespace detail
}  // namespace ata

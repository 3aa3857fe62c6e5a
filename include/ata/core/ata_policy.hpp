#pragma once
/// @file
/// ATA: lower confidence bounds from a known bound alpha on the workers' sub-exponential norms.

#include <string_view>

#include "ata/core/lower_bound_policy.hpp"

namespace ata {

/// ATA (Algorithm 1 of the paper): s_i = max(mean_i - 2 alpha (sqrt(L/K_i) + L/K_i), 0) with
/// L = ln(2 k^2), then the min-max allocation of s.
///
/// @code
/// ata::AtaPolicy policy(/*workers=*/51, /*alpha=*/29.0 * 51);  // alpha >= max_i ||X_i||_psi1
/// ata::Allocation a = policy.allocate(23);
/// @endcode
///
/// Not thread-safe (see Policy).
class AtaPolicy final : public LowerBoundPolicy {
 public:
  /// Throws ata::InvalidArgument for workers = 0 or alpha not finite and > 0.
  AtaPolicy(std::size_t workers, double alpha);

  [[nodiscard]] std::string_view name() const noexcept override { return "ata"; }
  [[nodiscard]] double alpha() const noexcept { return alpha_; }

 private:
  void compute_scores(std::span<double> scores) const override;

  double alpha_;
};

}  // namespace ata

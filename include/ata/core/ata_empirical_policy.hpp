#pragma once
/// @file
/// ATA-Empirical: data-dependent lower confidence bounds scaled by eta.

#include <string_view>

#include "ata/core/lower_bound_policy.hpp"

namespace ata {

/// ATA-Empirical: s_i = mean_i * max(1 - 2 eta (sqrt(L/K_i) + L/K_i), 0) with L = ln(2 k^2),
/// then the min-max allocation of s. eta bounds the ratio of a worker's sub-exponential norm
/// to its mean (1 for exponential times).
///
/// @code
/// ata::AtaEmpiricalPolicy policy(/*workers=*/51, /*eta=*/1.0);
/// ata::Allocation a = policy.allocate(23);
/// @endcode
///
/// Not thread-safe (see Policy).
class AtaEmpiricalPolicy final : public LowerBoundPolicy {
 public:
  /// Throws ata::InvalidArgument for workers = 0 or eta not finite and > 0.
  AtaEmpiricalPolicy(std::size_t workers, double eta);

  [[nodiscard]] std::string_view name() const noexcept override { return "ata-e"; }
  [[nodiscard]] double eta() const noexcept { return eta_; }

 private:
  void compute_scores(std::span<double> scores) const override;

  double eta_;
};

}  // namespace ata

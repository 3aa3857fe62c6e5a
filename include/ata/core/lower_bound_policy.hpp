#pragma once
/// @file
/// Common machinery of the learning policies: per-worker scores computed from the observed
/// means each round, then the exact min-max allocation of those scores.

#include <cstddef>
#include <span>
#include <vector>

#include "ata/core/policy.hpp"
#include "ata/core/solver.hpp"

namespace ata {

/// A policy that plays argmin_a max_i a_i s_i for scores s recomputed every round (ATA,
/// ATA-Empirical), or max_i (q_i + a_i s_i) with q_i = backlog_i s_i when allocated against a
/// backlog. Workers never observed have score 0 and so are tried first.
///
/// Not thread-safe (see Policy).
class LowerBoundPolicy : public Policy {
 public:
  /// False: the scores depend on each worker's count and mean only.
  [[nodiscard]] bool needs_every_sample() const noexcept final { return false; }
  /// Scores of the most recent allocate() (empty before the first).
  [[nodiscard]] std::span<const double> scores() const noexcept { return scores_; }

 protected:
  explicit LowerBoundPolicy(std::size_t workers);

  /// Fills `scores` (one per worker) for round(); the inputs below are cached per worker so
  /// that a round costs no square root.
  virtual void compute_scores(std::span<double> scores) const = 0;

  /// Observed mean of each worker (0 before any sample).
  [[nodiscard]] std::span<const double> means() const noexcept { return mean_; }
  /// 1/sqrt(K_i), +infinity while K_i = 0.
  [[nodiscard]] std::span<const double> inverse_sqrt_samples() const noexcept {
    return inv_sqrt_k_;
  }
  /// 1/K_i, +infinity while K_i = 0.
  [[nodiscard]] std::span<const double> inverse_samples() const noexcept { return inv_k_; }

 private:
  void choose(std::size_t batch, Allocation& out) final;
  void learn(std::size_t worker, double seconds) final;
  void learn_summary(std::size_t worker, const WorkerStats& chunk) final;
  // Refreshes the cached inputs of `worker` from its statistics.
  void refresh(std::size_t worker);

  std::vector<double> mean_;
  std::vector<double> inv_sqrt_k_;
  std::vector<double> inv_k_;
  std::vector<double> scores_;
  std::vector<double> offsets_;  // load-aware rounds: backlog times scores
  MinMaxSolver solver_;
};

}  // namespace ata

#pragma once
/// @file
/// OFTA: the optimal fixed allocation computed from the true mean task times.

#include <cstddef>
#include <span>
#include <string_view>
#include <vector>

#include "ata/core/policy.hpp"
#include "ata/core/solver.hpp"

namespace ata {

/// OFTA, the oracle yardstick: a* = argmin_a max_i a_i mu_i with the true means, every round
/// (max_i (backlog_i mu_i + a_i mu_i) when allocated against a backlog).
/// Nobody knows the means in practice; the simulator does, and so does a calibrated cluster.
/// When the truth changes (a worker slows down), set_means() gives the oracle the new means;
/// ata::sim::Simulation does so by itself when a scenario's WorkerChange takes effect.
///
/// @code
/// ata::OraclePolicy oracle(std::vector<double>{1.0, 2.0, 4.0});
/// ata::Allocation a = oracle.allocate(7);  // {4, 2, 1}
/// @endcode
///
/// Not thread-safe (see Policy).
class OraclePolicy final : public Policy {
 public:
  /// One mean per worker. Throws ata::InvalidArgument for no workers or a mean that is not
  /// finite and > 0.
  explicit OraclePolicy(std::vector<double> means);

  [[nodiscard]] std::string_view name() const noexcept override { return "ofta"; }
  /// False: it learns only through its statistics, so a summary per chunk is as good.
  [[nodiscard]] bool needs_every_sample() const noexcept override { return false; }
  [[nodiscard]] std::span<const double> means() const noexcept { return means_; }
  /// Replaces the means (one per worker, each finite and > 0, else ata::InvalidArgument and
  /// nothing changes); the next allocate() plays the optimal allocation of the new ones.
  void set_means(std::vector<double> means);

 private:
  void choose(std::size_t batch, Allocation& out) override;

  std::vector<double> means_;
  Allocation cached_;            // the solution for cached_.total() tasks, without backlog
  std::vector<double> offsets_;  // load-aware rounds: backlog times means
  MinMaxSolver solver_;
};

}  // namespace ata

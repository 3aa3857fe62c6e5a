#pragma once
/// @file
/// UTA: every round's B tasks spread evenly, round robin, over all workers.

#include <cstddef>
#include <string_view>
#include <vector>

#include "ata/core/policy.hpp"
#include "ata/core/solver.hpp"

namespace ata {

/// UTA: task j of a round goes to worker (r + j) mod n, then r += B (the spreading rule), so
/// with B < n every worker gets its turn over successive rounds.
///
/// @code
/// ata::UniformPolicy uniform(4);
/// ata::Allocation a = uniform.allocate(6);  // {2, 2, 1, 1}; the next round starts at worker 2
/// @endcode
///
/// Not thread-safe (see Policy).
class UniformPolicy final : public Policy {
 public:
  /// Throws ata::InvalidArgument for workers = 0.
  explicit UniformPolicy(std::size_t workers);

  [[nodiscard]] std::string_view name() const noexcept override { return "uta"; }
  /// False: it learns only through its statistics, so a summary per chunk is as good.
  [[nodiscard]] bool needs_every_sample() const noexcept override { return false; }

 private:
  void choose(std::size_t batch, Allocation& out) override;

  std::vector<std::size_t> everyone_;
  RoundRobinSpread spread_;
};

}  // namespace ata

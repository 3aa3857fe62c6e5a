#pragma once
/// @file
/// Strategies that dispatch tasks while the round runs instead of allocating them up front:
/// GTA (greedy) and pull.

#include <cstddef>
#include <string_view>

#include "ata/core/policy.hpp"

namespace ata {

/// GTA ("gta", Dispatch::greedy) or a shared pull queue ("pull", Dispatch::pull). Such a policy
/// has no allocation: allocate() throws ata::Error and the engine dispatches by itself. It
/// still records every observed duration, so reports look the same for every strategy.
///
/// @code
/// ata::DynamicPolicy gta(8, ata::Dispatch::greedy);
/// if (gta.dispatch() == ata::Dispatch::greedy) { /* every worker runs until B are done */ }
/// @endcode
///
/// Not thread-safe (see Policy).
class DynamicPolicy final : public Policy {
 public:
  /// Throws ata::InvalidArgument for workers = 0 or mode = Dispatch::allocated.
  DynamicPolicy(std::size_t workers, Dispatch mode);

  [[nodiscard]] std::string_view name() const noexcept override;
  [[nodiscard]] Dispatch dispatch() const noexcept override { return mode_; }
  /// False: it learns only through its statistics, so a summary per chunk is as good.
  [[nodiscard]] bool needs_every_sample() const noexcept override { return false; }

 private:
  void choose(std::size_t batch, Allocation& out) override;

  Dispatch mode_;
};

}  // namespace ata

#pragma once
/// @file
/// Strategies that dispatch tasks while the round runs instead of allocating them up front:
/// GTA (greedy) and pull.

#include <cstddef>
#include <string_view>

#include "ata/core/policy.hpp"

namespace ata {

/// GTA ("gta", Dispatch::greedy: a fungible race of every worker) or a shared pull queue
/// ("pull", Dispatch::pull: an indexed race of every worker). Such a policy has no allocation:
/// allocate() throws ata::Error; its plan() races. It still records every observed duration,
/// so reports look the same for every strategy.
///
/// @code
/// ata::DynamicPolicy gta(8, ata::Dispatch::greedy);
/// ata::Plan plan = gta.plan(/*batch=*/16);  // every worker races until 16 results are in
/// @endcode
///
/// Not thread-safe (see Policy).
class DynamicPolicy final : public Policy {
 public:
  /// Throws ata::InvalidArgument for workers = 0 or a mode other than greedy and pull.
  DynamicPolicy(std::size_t workers, Dispatch mode);

  [[nodiscard]] std::string_view name() const noexcept override;
  [[nodiscard]] Dispatch dispatch() const noexcept { return mode_; }
  /// False: it learns only through its statistics, so a summary per chunk is as good.
  [[nodiscard]] bool needs_every_sample() const noexcept override { return false; }

 private:
  void choose_plan(std::size_t batch, Plan& out) override;

  Dispatch mode_;
};

}  // namespace ata

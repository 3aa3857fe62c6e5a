#pragma once
/// @file
/// A fixed strategy: the same plan every round ("race:M", or any plan of your own).

#include <cstddef>
#include <limits>
#include <span>
#include <string>
#include <string_view>

#include "ata/core/plan.hpp"
#include "ata/core/policy.hpp"

namespace ata {

/// Plays one plan every round, learning nothing but its statistics.
///
/// @code
/// // Race the three fastest of 51 workers until B results are in (Rennala SGD on a subset).
/// std::vector<std::size_t> fastest{0, 1, 2};
/// ata::FixedPlanPolicy race("race:3", ata::Plan::race(51, fastest, ata::RaceKind::fungible));
/// ata::Plan plan = race.plan(/*batch=*/23);  // the same plan, round after round
/// @endcode
///
/// Not thread-safe (see Policy).
class FixedPlanPolicy final : public Policy {
 public:
  /// Throws ata::InvalidArgument for a plan of no workers or an empty name.
  FixedPlanPolicy(std::string name, Plan plan);

  [[nodiscard]] std::string_view name() const noexcept override { return name_; }
  /// False: it learns nothing beyond its statistics.
  [[nodiscard]] bool needs_every_sample() const noexcept override { return false; }

 private:
  void choose_plan(std::size_t batch, Plan& out) override;

  std::string name_;
  Plan plan_;
};

/// The plan of "race:M": a fungible race of the `members` workers with the smallest `means`
/// (ties by lower index). With a finite `restart_factor` F ("race:M@F"), a member's copy that
/// has run F x its mean is stopped and started afresh (Plan::set_restart_after), which pays on
/// heavy tails. Throws ata::InvalidArgument for members = 0 or more than the workers, a mean
/// that is NaN or not positive, or a factor that is NaN or not positive (+infinity: no
/// restarts).
[[nodiscard]] Plan race_of_fastest(std::span<const double> means, std::size_t members,
                                   double restart_factor = std::numeric_limits<double>::infinity());

}  // namespace ata

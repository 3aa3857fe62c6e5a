#include "ata/core/fixed_plan_policy.hpp"

#include <algorithm>
#include <limits>
#include <numeric>
#include <vector>

#include "ata/core/error.hpp"
#include "core/checks.hpp"

namespace ata {

FixedPlanPolicy::FixedPlanPolicy(std::string name, Plan plan)
    : Policy(plan.workers()), name_(std::move(name)), plan_(std::move(plan)) {
  if (name_.empty()) throw InvalidArgument("a fixed plan's policy needs a name, got ''");
}

void FixedPlanPolicy::choose_plan(std::size_t /*batch*/, Plan& out) { out = plan_; }

Plan race_of_fastest(std::span<const double> means, std::size_t members, double restart_factor) {
  if (members == 0 || members > means.size()) {
    throw InvalidArgument("a race of the fastest needs 1 to " + std::to_string(means.size()) +
                          " members, got " + std::to_string(members));
  }
  for (const double m : means) detail::require_positive(m, "mean task time");
  const bool restarts = restart_factor != std::numeric_limits<double>::infinity();
  if (restarts) detail::require_positive(restart_factor, "restart budget factor");
  std::vector<std::size_t> order(means.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return means[a] < means[b]; });
  order.resize(members);
  Plan plan = Plan::race(means.size(), order, RaceKind::fungible);
  if (restarts) {
    for (const std::size_t i : order) plan.set_restart_after(i, restart_factor * means[i]);
  }
  return plan;
}

}  // namespace ata

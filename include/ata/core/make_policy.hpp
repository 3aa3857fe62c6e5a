#pragma once
/// @file
/// Policies by name, as the apps and configuration files spell them.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "ata/core/objective.hpp"
#include "ata/core/plan.hpp"
#include "ata/core/policy.hpp"

namespace ata {

/// Parameters of the named policies; each policy reads only its own.
struct PolicyOptions {
  std::optional<double> alpha;  ///< "ata": bound on the sub-exponential norms (required).
  double eta = 1.0;             ///< "ata-e": bound on norm / mean.
  std::vector<double>
      means;               ///< "ofta", "race:M[@F]": true mean task time of each worker (required).
  std::uint64_t seed = 0;  ///< "ata-auto": seed of its posterior draws.
  /// "ata-auto": the race it may play (AtaAutoPolicy::Options::race; std::nullopt: quotas only).
  std::optional<RaceKind> race;
  /// "ata-auto" with `race`: whether its races may carry restart budgets
  /// (AtaAutoPolicy::Options::race_restarts).
  bool race_restarts = true;
  /// "ata-auto" with `race`: whether its quotas may be hedged
  /// (AtaAutoPolicy::Options::hedge_quotas).
  bool hedge_quotas = true;
  Objective objective;  ///< "ata-auto" with `race`: the objective its plans minimise.
};

/// The plain names make_policy() accepts: gta, ofta, uta, ata, ata-e, ata-auto, pull. It also
/// accepts "race:M" for M = 1, 2, ...: a fungible race of the M workers with the smallest true
/// means (PolicyOptions::means), the rest idle (ata::race_of_fastest); and "race:M@F" for a
/// finite F > 0: the same race, each racer's copy restarted once it has run F x its mean.
[[nodiscard]] std::span<const std::string_view> policy_names() noexcept;

/// Throws ata::InvalidArgument, listing the known names, unless make_policy() knows `name`
/// (whatever the number of workers: "race:M" with M too large for them fails only there).
void require_policy_name(std::string_view name);

/// Builds the policy called `name` for `workers` workers. Throws ata::InvalidArgument for an
/// unknown name (listing the known ones), a missing or bad parameter, or workers = 0.
[[nodiscard]] std::unique_ptr<Policy> make_policy(std::string_view name, std::size_t workers,
                                                  const PolicyOptions& options = {});

}  // namespace ata

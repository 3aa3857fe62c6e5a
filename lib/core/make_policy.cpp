#include "ata/core/make_policy.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <optional>
#include <string>

#include "ata/core/ata_auto_policy.hpp"
#include "ata/core/ata_empirical_policy.hpp"
#include "ata/core/ata_policy.hpp"
#include "ata/core/dynamic_policy.hpp"
#include "ata/core/error.hpp"
#include "ata/core/fixed_plan_policy.hpp"
#include "ata/core/oracle_policy.hpp"
#include "ata/core/uniform_policy.hpp"
#include "core/checks.hpp"

namespace ata {

namespace {
constexpr std::array<std::string_view, 7> kNames{"gta", "ofta", "uta", "ata", "ata-e", "ata-auto", "pull"};
constexpr std::string_view kRacePrefix = "race:";

// M of "race:M"; std::nullopt for another name. Throws for "race:" followed by anything but
// a whole number >= 1.
std::optional<std::size_t> race_members(std::string_view name) {
  if (!name.starts_with(kRacePrefix)) return std::nullopt;
  const std::string_view digits = name.substr(kRacePrefix.size());
  std::size_t members = 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), members);
  if (digits.empty() || error != std::errc{} || end != digits.data() + digits.size() ||
      members == 0) {
    throw InvalidArgument("strategy '" + detail::excerpt(name) +
                          "': race:M needs M, the number of workers that race, as a whole "
                          "number >= 1");
  }
  return members;
}

[[noreturn]] void throw_unknown(std::string_view name) {
  std::string known;
  for (const auto n : kNames) known += (known.empty() ? "" : ", ") + std::string(n);
  throw InvalidArgument("unknown strategy '" + detail::excerpt(name) + "'; expected one of: " +
                        known + ", race:M");
}

}  // namespace

std::span<const std::string_view> policy_names() noexcept { return kNames; }

void require_policy_name(std::string_view name) {
  if (std::find(kNames.begin(), kNames.end(), name) != kNames.end()) return;
  if (!race_members(name)) throw_unknown(name);
}

std::unique_ptr<Policy> make_policy(std::string_view name, std::size_t workers,
                                    const PolicyOptions& options) {
  if (workers == 0) throw InvalidArgument("a policy needs at least one worker, got 0");
  if (name == "gta") return std::make_unique<DynamicPolicy>(workers, Dispatch::greedy);
  if (name == "pull") return std::make_unique<DynamicPolicy>(workers, Dispatch::pull);
  if (name == "uta") return std::make_unique<UniformPolicy>(workers);
  if (name == "ata-e") return std::make_unique<AtaEmpiricalPolicy>(workers, options.eta);
  if (name == "ata-auto") {
    return std::make_unique<AtaAutoPolicy>(workers, AtaAutoPolicy::Options{}
                                                        .set_seed(options.seed)
                                                        .set_race(options.race)
                                                        .set_race_restarts(options.race_restarts)
                                                        .set_objective(options.objective));
  }
  if (name == "ata") {
    if (!options.alpha) throw InvalidArgument("strategy 'ata' needs alpha (a bound on the workers' sub-exponential norms)");
    return std::make_unique<AtaPolicy>(workers, *options.alpha);
  }
  if (name == "ofta") {
    if (options.means.size() != workers) {
      throw InvalidArgument("strategy 'ofta' needs the true mean of each of the " +
                            std::to_string(workers) + " workers, got " +
                            std::to_string(options.means.size()));
    }
    return std::make_unique<OraclePolicy>(options.means);
  }
  if (const auto members = race_members(name)) {
    if (options.means.size() != workers) {
      throw InvalidArgument("strategy '" + std::string(name) + "' needs the true mean of each of the " +
                            std::to_string(workers) + " workers, got " +
                            std::to_string(options.means.size()));
    }
    return std::make_unique<FixedPlanPolicy>(std::string(name),
                                             race_of_fastest(options.means, *members));
  }
  throw_unknown(name);
}

}  // namespace ata

#include "ata/core/make_policy.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <limits>
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
constexpr std::array<std::string_view, 7> kNames{"gta",   "ofta",     "uta", "ata",
                                                 "ata-e", "ata-auto", "pull"};
constexpr std::string_view kRacePrefix = "race:";

struct RaceName {
  std::size_t members = 0;
  double restart_factor = std::numeric_limits<double>::infinity();
};

// M and F of "race:M" or "race:M@F"; std::nullopt for another name. Throws for "race:"
// followed by anything but a whole number >= 1, optionally then '@' and a finite number > 0.
std::optional<RaceName> race_name(std::string_view name) {
  if (!name.starts_with(kRacePrefix)) return std::nullopt;
  const std::string_view rest = name.substr(kRacePrefix.size());
  const std::size_t at = rest.find('@');
  const std::string_view digits = rest.substr(0, at);
  RaceName race;
  const auto [end, error] =
      std::from_chars(digits.data(), digits.data() + digits.size(), race.members);
  if (digits.empty() || error != std::errc{} || end != digits.data() + digits.size() ||
      race.members == 0) {
    throw InvalidArgument("strategy '" + detail::excerpt(name) +
                          "': race:M needs M, the number of workers that race, as a whole "
                          "number >= 1");
  }
  if (at == std::string_view::npos) return race;
  const std::string_view factor = rest.substr(at + 1);
  const auto [factor_end, factor_error] =
      std::from_chars(factor.data(), factor.data() + factor.size(), race.restart_factor);
  if (factor.empty() || factor_error != std::errc{} ||
      factor_end != factor.data() + factor.size() || !std::isfinite(race.restart_factor) ||
      race.restart_factor <= 0.0) {
    throw InvalidArgument("strategy '" + detail::excerpt(name) +
                          "': race:M@F needs F, the restart budget as a multiple of each "
                          "racer's mean, as a finite number > 0 (race:8@0.5)");
  }
  return race;
}

[[noreturn]] void throw_unknown(std::string_view name) {
  std::string known;
  for (const auto n : kNames) known += (known.empty() ? "" : ", ") + std::string(n);
  throw InvalidArgument("unknown strategy '" + detail::excerpt(name) +
                        "'; expected one of: " + known + ", race:M, race:M@F");
}

}  // namespace

std::span<const std::string_view> policy_names() noexcept { return kNames; }

void require_policy_name(std::string_view name) {
  if (std::find(kNames.begin(), kNames.end(), name) != kNames.end()) return;
  if (!race_name(name)) throw_unknown(name);
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
                                                        .set_hedge_quotas(options.hedge_quotas)
                                                        .set_objective(options.objective));
  }
  if (name == "ata") {
    if (!options.alpha)
      throw InvalidArgument(
          "strategy 'ata' needs alpha (a bound on the workers' sub-exponential norms)");
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
  if (const auto race = race_name(name)) {
    if (options.means.size() != workers) {
      throw InvalidArgument("strategy '" + std::string(name) +
                            "' needs the true mean of each of the " + std::to_string(workers) +
                            " workers, got " + std::to_string(options.means.size()));
    }
    return std::make_unique<FixedPlanPolicy>(
        std::string(name), race_of_fastest(options.means, race->members, race->restart_factor));
  }
  throw_unknown(name);
}

}  // namespace ata

#include "ata/core/make_policy.hpp"

#include <array>
#include <string>

#include "ata/core/ata_auto_policy.hpp"
#include "ata/core/ata_empirical_policy.hpp"
#include "ata/core/ata_policy.hpp"
#include "ata/core/dynamic_policy.hpp"
#include "ata/core/error.hpp"
#include "ata/core/oracle_policy.hpp"
#include "ata/core/uniform_policy.hpp"

namespace ata {

namespace {
constexpr std::array<std::string_view, 7> kNames{"gta", "ofta", "uta", "ata", "ata-e", "ata-auto", "pull"};
}  // namespace

std::span<const std::string_view> policy_names() noexcept { return kNames; }

std::unique_ptr<Policy> make_policy(std::string_view name, std::size_t workers,
                                    const PolicyOptions& options) {
  if (workers == 0) throw InvalidArgument("a policy needs at least one worker, got 0");
  if (name == "gta") return std::make_unique<DynamicPolicy>(workers, Dispatch::greedy);
  if (name == "pull") return std::make_unique<DynamicPolicy>(workers, Dispatch::pull);
  if (name == "uta") return std::make_unique<UniformPolicy>(workers);
  if (name == "ata-e") return std::make_unique<AtaEmpiricalPolicy>(workers, options.eta);
  if (name == "ata-auto") {
    return std::make_unique<AtaAutoPolicy>(workers, AtaAutoPolicy::Options{}.set_seed(options.seed));
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
  std::string known;
  for (const auto n : kNames) known += (known.empty() ? "" : ", ") + std::string(n);
  throw InvalidArgument("unknown strategy '" + std::string(name) + "'; expected one of: " + known);
}

}  // namespace ata

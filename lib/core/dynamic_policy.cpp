#include "ata/core/dynamic_policy.hpp"

#include <string>

#include "ata/core/error.hpp"

namespace ata {

DynamicPolicy::DynamicPolicy(std::size_t workers, Dispatch mode) : Policy(workers), mode_(mode) {
  if (mode != Dispatch::greedy && mode != Dispatch::pull) {
    throw InvalidArgument("DynamicPolicy needs Dispatch::greedy or Dispatch::pull, got " +
                          std::string(dispatch_name(mode)));
  }
}

std::string_view DynamicPolicy::name() const noexcept {
  return mode_ == Dispatch::greedy ? "gta" : "pull";
}

void DynamicPolicy::choose_plan(std::size_t /*batch*/, Plan& out) {
  out.set_race_kind(mode_ == Dispatch::greedy ? RaceKind::fungible : RaceKind::indexed);
  for (std::size_t i = 0; i < workers(); ++i) out.set_racer(i);
}

}  // namespace ata

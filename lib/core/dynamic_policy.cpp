#include "ata/core/dynamic_policy.hpp"

#include "ata/core/error.hpp"

namespace ata {

DynamicPolicy::DynamicPolicy(std::size_t workers, Dispatch mode) : Policy(workers), mode_(mode) {
  if (mode == Dispatch::allocated) {
    throw InvalidArgument("DynamicPolicy needs Dispatch::greedy or Dispatch::pull, got allocated");
  }
}

std::string_view DynamicPolicy::name() const noexcept {
  return mode_ == Dispatch::greedy ? "gta" : "pull";
}

// Unreachable: Policy::allocate() refuses dynamic policies before calling choose().
void DynamicPolicy::choose(std::size_t /*batch*/, Allocation& /*out*/) {
  throw Error("policy '" + std::string(name()) + "' has no allocation");
}

}  // namespace ata

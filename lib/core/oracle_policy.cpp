#include "ata/core/oracle_policy.hpp"

#include <string>

#include "ata/core/error.hpp"
#include "ata/core/solver.hpp"
#include "core/checks.hpp"

namespace ata {

namespace {

std::vector<double> checked_means(std::vector<double> means) {
  for (std::size_t i = 0; i < means.size(); ++i) {
    detail::require_positive(means[i], ("mean of worker " + std::to_string(i)).c_str());
  }
  return means;
}

}  // namespace

OraclePolicy::OraclePolicy(std::vector<double> means)
    : Policy(means.size()), means_(checked_means(std::move(means))) {}

void OraclePolicy::set_means(std::vector<double> means) {
  if (means.size() != workers()) {
    throw InvalidArgument("set_means: got " + std::to_string(means.size()) + " means for " +
                          std::to_string(workers()) + " workers");
  }
  means_ = checked_means(std::move(means));
  cached_ = Allocation();
}

void OraclePolicy::choose(std::size_t batch, Allocation& out) {
  const auto queued = backlog();
  if (!queued.empty()) {
    offsets_.resize(workers());
    for (std::size_t i = 0; i < offsets_.size(); ++i) offsets_[i] = queued[i] * means_[i];
    solver_.solve(means_, offsets_, batch, out);
    return;
  }
  if (cached_.total() != batch) solver_.solve(means_, batch, cached_);
  out = cached_;
}

}  // namespace ata

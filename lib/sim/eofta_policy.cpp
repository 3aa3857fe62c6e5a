#include "ata/sim/eofta_policy.hpp"

#include <string>

#include "ata/core/error.hpp"

namespace ata::sim {

namespace {

std::vector<models::TimeModel> checked(std::vector<models::TimeModel> workers,
                                       const RoundTimeOptions& options) {
  // An empty allocation checks the workers and the options without solving anything.
  (void)expected_round_time(workers, Allocation(workers.size()), options);
  return workers;
}

}  // namespace

EoftaPolicy::EoftaPolicy(std::vector<models::TimeModel> workers, const RoundTimeOptions& options)
    : Policy(workers.size()), workers_(checked(std::move(workers), options)), options_(options) {}

void EoftaPolicy::set_models(std::vector<models::TimeModel> workers) {
  if (workers.size() != this->workers()) {
    throw InvalidArgument("set_models: got " + std::to_string(workers.size()) + " laws for " +
                          std::to_string(this->workers()) + " workers");
  }
  workers_ = std::move(workers);
  solution_.reset();
}

void EoftaPolicy::choose(std::size_t batch, Allocation& out) {
  if (!solution_ || solution_->allocation.total() != batch) {
    solution_ = solve_eofta(workers_, batch, options_);
  }
  out = solution_->allocation;
}

}  // namespace ata::sim

#include "ata/core/lower_bound_policy.hpp"

#include <cmath>
#include <limits>

namespace ata {

namespace {
constexpr double kInfinity = std::numeric_limits<double>::infinity();
}  // namespace

LowerBoundPolicy::LowerBoundPolicy(std::size_t workers)
    : Policy(workers),
      mean_(workers, 0.0),
      inv_sqrt_k_(workers, kInfinity),
      inv_k_(workers, kInfinity) {}

void LowerBoundPolicy::choose(std::size_t batch, Allocation& out) {
  scores_.resize(workers());
  compute_scores(scores_);
  const auto queued = backlog();
  if (queued.empty()) {
    solver_.solve(scores_, batch, out);
    return;
  }
  // The backlog's expected time, from the same estimates as the new tasks'.
  offsets_.resize(workers());
  for (std::size_t i = 0; i < offsets_.size(); ++i) offsets_[i] = queued[i] * scores_[i];
  solver_.solve(scores_, offsets_, batch, out);
}

void LowerBoundPolicy::learn(std::size_t worker, double /*seconds*/) { refresh(worker); }

void LowerBoundPolicy::learn_summary(std::size_t worker, const WorkerStats& /*chunk*/) {
  refresh(worker);
}

void LowerBoundPolicy::refresh(std::size_t worker) {
  const WorkerStats& s = stats(worker);
  const double k = static_cast<double>(s.count());
  mean_[worker] = s.mean();
  inv_k_[worker] = 1.0 / k;
  inv_sqrt_k_[worker] = 1.0 / std::sqrt(k);
}

}  // namespace ata

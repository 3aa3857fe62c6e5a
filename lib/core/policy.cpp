#include "ata/core/policy.hpp"

#include <cmath>
#include <string>

#include "ata/core/error.hpp"
#include "core/checks.hpp"

namespace ata {

Policy::Policy(std::size_t workers) : stats_(workers) {
  if (workers == 0) throw InvalidArgument("a policy needs at least one worker, got 0");
}

Allocation Policy::allocate(std::size_t batch) {
  Allocation out(workers());
  allocate(batch, out);
  return out;
}

void Policy::allocate(std::size_t batch, Allocation& out) {
  if (dispatch() != Dispatch::allocated) {
    throw Error("policy '" + std::string(name()) +
                "' dispatches tasks dynamically and has no allocation to give");
  }
  if (batch < 1) throw InvalidArgument("batch size B must be >= 1, got 0");
  if (out.size() == workers()) {
    out.clear();
  } else {
    out = Allocation(workers());
  }
  ++round_;
  try {
    choose(batch, out);
  } catch (...) {
    --round_;
    throw;
  }
}

void Policy::allocate(std::size_t batch, std::span<const double> backlog, Allocation& out) {
  if (backlog.size() != workers()) {
    throw InvalidArgument("backlog: expected one entry per worker (" + std::to_string(workers()) +
                          "), got " + std::to_string(backlog.size()));
  }
  bool idle = true;
  for (std::size_t i = 0; i < backlog.size(); ++i) {
    // The message is built only for a bad entry: this runs for every load-aware batch.
    if (!std::isfinite(backlog[i]) || backlog[i] < 0.0) {
      detail::require_non_negative(backlog[i], ("backlog of worker " + std::to_string(i)).c_str());
    }
    idle = idle && backlog[i] == 0.0;
  }
  if (idle) {
    allocate(batch, out);
    return;
  }
  backlog_ = backlog;
  try {
    allocate(batch, out);
  } catch (...) {
    backlog_ = {};
    throw;
  }
  backlog_ = {};
}

void Policy::observe(std::size_t worker, double seconds) {
  detail::require_worker_index(worker, workers());
  stats_[worker].add(seconds);  // validates the duration
  learn(worker, seconds);
}

void Policy::observe_censored(std::size_t worker, double seconds) {
  detail::require_worker_index(worker, workers());
  stats_[worker].add_censored(seconds);  // validates the duration
  learn_censored(worker, seconds);
}

void Policy::observe_summary(std::size_t worker, const WorkerStats& chunk) {
  detail::require_worker_index(worker, workers());
  if (needs_every_sample()) {
    throw Error("policy '" + std::string(name()) +
                "' learns from every task's time and cannot absorb a summary; call observe()");
  }
  if (chunk.count() == 0) return;
  stats_[worker].merge(chunk);
  learn_summary(worker, chunk);
}

const WorkerStats& Policy::stats(std::size_t worker) const {
  detail::require_worker_index(worker, workers());
  return stats_[worker];
}

}  // namespace ata

#include "ata/core/policy.hpp"

#include <cmath>
#include <string>

#include "ata/core/error.hpp"
#include "core/checks.hpp"

namespace ata {

Policy::Policy(std::size_t workers) : stats_(workers) {
  if (workers == 0) throw InvalidArgument("a policy needs at least one worker, got 0");
}

namespace {

// Throws for a backlog of the wrong size or with an entry that is NaN, infinite or negative;
// returns whether every entry is 0 (every worker idle).
bool check_backlog(std::span<const double> backlog, std::size_t workers) {
  if (backlog.size() != workers) {
    throw InvalidArgument("backlog: expected one entry per worker (" + std::to_string(workers) +
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
  return idle;
}

}  // namespace

void Policy::start_round(std::size_t batch, std::span<const double> backlog, Plan& out) {
  if (batch < 1) throw InvalidArgument("batch size B must be >= 1, got 0");
  out.reset(workers());
  ++round_;
  backlog_ = backlog;
  try {
    choose_plan(batch, out);
  } catch (...) {
    --round_;
    backlog_ = {};
    throw;
  }
  backlog_ = {};
}

void Policy::choose_plan(std::size_t batch, Plan& out) { choose(batch, out.quotas_); }

void Policy::choose(std::size_t /*batch*/, Allocation& /*out*/) {
  throw Error("policy '" + std::string(name()) + "' plans its rounds and has no choose()");
}

Plan Policy::plan(std::size_t batch) {
  Plan out(workers());
  plan(batch, out);
  return out;
}

void Policy::plan(std::size_t batch, Plan& out) { start_round(batch, {}, out); }

void Policy::plan(std::size_t batch, std::span<const double> backlog, Plan& out) {
  const bool idle = check_backlog(backlog, workers());
  start_round(batch, idle ? std::span<const double>{} : backlog, out);
}

Allocation Policy::allocate(std::size_t batch) {
  Allocation out(workers());
  allocate(batch, out);
  return out;
}

void Policy::allocate(std::size_t batch, Allocation& out) { allocate_from(batch, {}, out); }

void Policy::allocate(std::size_t batch, std::span<const double> backlog, Allocation& out) {
  const bool idle = check_backlog(backlog, workers());
  allocate_from(batch, idle ? std::span<const double>{} : backlog, out);
}

void Policy::allocate_from(std::size_t batch, std::span<const double> backlog, Allocation& out) {
  start_round(batch, backlog, allocating_);
  if (!allocating_.racers().empty()) {
    --round_;
    throw Error("policy '" + std::string(name()) +
                "' dispatches tasks dynamically (its plan races) and has no allocation to give");
  }
  out = allocating_.quotas();
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

#include "ata/core/plan.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "ata/core/error.hpp"
#include "core/checks.hpp"

namespace ata {

namespace {
constexpr double kNever = std::numeric_limits<double>::infinity();
}  // namespace

Plan::Plan(std::size_t workers) : quotas_(workers), racer_(workers, 0) {}

Plan Plan::quotas(Allocation allocation) {
  Plan plan(allocation.size());
  plan.quotas_ = std::move(allocation);
  return plan;
}

Plan Plan::race(std::size_t workers, RaceKind kind) {
  Plan plan(workers);
  plan.race_kind_ = kind;
  std::fill(plan.racer_.begin(), plan.racer_.end(), 1);
  plan.racers_.resize(workers);
  for (std::size_t i = 0; i < workers; ++i) plan.racers_[i] = i;
  return plan;
}

Plan Plan::race(std::size_t workers, std::span<const std::size_t> members, RaceKind kind) {
  Plan plan(workers);
  plan.race_kind_ = kind;
  for (const std::size_t m : members) plan.set_racer(m);
  return plan;
}

Role Plan::role(std::size_t worker) const {
  detail::require_worker_index(worker, workers());
  if (racer_[worker] != 0) return Racer{};
  if (quotas_[worker] > 0) return Quota{quotas_[worker]};
  return Idle{};
}

Dispatch Plan::dispatch() const noexcept {
  if (racers_.empty()) return Dispatch::allocated;
  if (quotas_.total() > 0) return Dispatch::mixed;
  return race_kind_ == RaceKind::fungible ? Dispatch::greedy : Dispatch::pull;
}

double Plan::restart_after(std::size_t worker) const noexcept {
  return restart_after_.empty() ? kNever : restart_after_[worker];
}

double backed_off_budget(double budget, std::size_t restarted) noexcept {
  if (restarted <= kRestartsBeforeBackoff) return budget;
  // Past 2^1024 the product is +infinity: no budget any more.
  const std::size_t doublings = std::min<std::size_t>(restarted - kRestartsBeforeBackoff, 1100);
  return std::ldexp(budget, static_cast<int>(doublings));
}

double Plan::restart_budget(std::size_t worker, std::size_t restarted) const noexcept {
  return backed_off_budget(restart_after(worker), restarted);
}

Plan& Plan::set_quota(std::size_t worker, std::size_t tasks) {
  detail::require_worker_index(worker, workers());
  if (racer_[worker] != 0) {
    racer_[worker] = 0;
    racers_.erase(std::find(racers_.begin(), racers_.end(), worker));
  }
  quotas_.set(worker, tasks);
  return *this;
}

Plan& Plan::set_racer(std::size_t worker) {
  detail::require_worker_index(worker, workers());
  quotas_.set(worker, 0);
  if (racer_[worker] == 0) {
    racer_[worker] = 1;
    racers_.insert(std::lower_bound(racers_.begin(), racers_.end(), worker), worker);
  }
  return *this;
}

Plan& Plan::set_idle(std::size_t worker) { return set_quota(worker, 0); }

Plan& Plan::set_backups(const BackupOptions& backups) {
  [[maybe_unused]] const BackupRule validated(backups);  // throws for bad settings
  backups_ = backups;
  return *this;
}

Plan& Plan::set_restart_after(std::size_t worker, double seconds) {
  detail::require_worker_index(worker, workers());
  if (std::isnan(seconds) || seconds <= 0.0) {
    throw InvalidArgument("restart budget of worker " + std::to_string(worker) +
                          " must be > 0 seconds (+inf: never), got " + detail::to_text(seconds));
  }
  if (restart_after_.empty()) {
    if (seconds == kNever) return *this;
    restart_after_.assign(workers(), kNever);
  }
  restart_after_[worker] = seconds;
  if (std::all_of(restart_after_.begin(), restart_after_.end(),
                  [](double s) { return s == kNever; })) {
    restart_after_.clear();
  }
  return *this;
}

void Plan::reset(std::size_t workers) {
  if (quotas_.size() == workers) {
    quotas_.clear();
  } else {
    quotas_ = Allocation(workers);
  }
  racer_.assign(workers, 0);
  racers_.clear();
  race_kind_ = RaceKind::indexed;
  backups_.reset();
  retries_.reset();
  restart_after_.clear();
}

void Plan::check(std::size_t batch, std::size_t workers, std::string_view policy) const {
  // Named only for an error: a scheduler checks every plan.
  const auto who = [policy] { return "policy '" + std::string(policy) + "'"; };
  if (this->workers() != workers) {
    throw Error(who() + " planned for " + std::to_string(this->workers()) +
                " workers, but there are " + std::to_string(workers));
  }
  // Summed here rather than taken from total(), which a huge count could wrap around.
  std::size_t sum = 0;
  for (const std::size_t tasks : quotas_) {
    if (tasks > batch - sum) {
      throw Error(who() + " gave quotas of more than " + std::to_string(batch) +
                  " tasks for a batch of B = " + std::to_string(batch));
    }
    sum += tasks;
  }
  if (sum < batch && racers_.empty()) {
    throw Error(who() + " gave quotas of " + std::to_string(sum) + " tasks for a batch of B = " +
                std::to_string(batch) + " and no racer to run the rest; quotas must sum to B");
  }
}

std::string_view dispatch_name(Dispatch dispatch) noexcept {
  switch (dispatch) {
    case Dispatch::allocated:
      return "allocated";
    case Dispatch::greedy:
      return "greedy";
    case Dispatch::pull:
      return "pull";
    case Dispatch::mixed:
      return "mixed";
  }
  return "allocated";
}

}  // namespace ata

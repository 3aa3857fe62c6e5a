#include "ata/sim/simulation.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "ata/core/error.hpp"
#include "ata/core/solver.hpp"

namespace ata::sim {

namespace {
// Heap order of the round's events: earliest first, ties by lower worker index.
template <class CopyEvent>
bool later(const CopyEvent& a, const CopyEvent& b) {
  return a.at != b.at ? a.at > b.at : a.worker > b.worker;
}
}  // namespace

Simulation::Simulation(models::Scenario scenario, Policy& policy, std::size_t batch,
                       std::uint64_t seed, const BackupOptions& backups)
    : scenario_(std::move(scenario)),
      policy_(policy),
      oracle_(dynamic_cast<OraclePolicy*>(&policy)),
      eofta_(dynamic_cast<EoftaPolicy*>(&policy)),
      batch_(batch),
      models_(scenario_.models().begin(), scenario_.models().end()),
      means_(scenario_.means()),
      plan_(scenario_.workers()),
      backups_(backups),
      completed_(scenario_.workers(), 0),
      copies_(scenario_.workers()),
      queue_(scenario_.workers()),
      queue_head_(scenario_.workers(), 0),
      sequence_(scenario_.workers(), 0),
      view_(scenario_.workers()) {
  if (batch < 1) throw InvalidArgument("batch size B must be >= 1, got 0");
  if (policy.workers() != scenario_.workers()) {
    throw InvalidArgument("policy '" + std::string(policy.name()) + "' has " +
                          std::to_string(policy.workers()) + " workers but scenario '" +
                          scenario_.name() + "' has " + std::to_string(scenario_.workers()));
  }
  [[maybe_unused]] const BackupRule validated(backups);  // throws for bad options
  streams_.reserve(models_.size());
  for (std::size_t i = 0; i < models_.size(); ++i) streams_.emplace_back(seed, i);
  optimal_loss_ = solve_min_max(means_, batch_).proxy_loss(means_);
}

void Simulation::apply_changes() {
  const auto changes = scenario_.changes();
  bool changed = false;
  while (next_change_ < changes.size() && changes[next_change_].round <= round_) {
    const models::WorkerChange& c = changes[next_change_++];
    models_[c.worker] = c.model;
    means_[c.worker] = c.model.mean();
    changed = true;
  }
  if (!changed) return;
  optimal_loss_ = solve_min_max(means_, batch_).proxy_loss(means_);
  if (oracle_ != nullptr) oracle_->set_means(means_);
  if (eofta_ != nullptr) eofta_->set_models(models_);
}

RoundRecord Simulation::run_round() {
  ++round_;
  apply_changes();
  RoundRecord record;
  record.round = round_;
  record.optimal_proxy_loss = optimal_loss_;
  policy_.plan(batch_, plan_);
  plan_.check(batch_, models_.size(), policy_.name());
  std::fill(completed_.begin(), completed_.end(), std::size_t{0});
  copy_log_.clear();
  const BackupRule rule(plan_.backups().value_or(backups_));
  fungible_ = !plan_.racers().empty() && plan_.race_kind() == RaceKind::fungible;
  const bool hedging = rule.options().enabled() && !fungible_;
  if (plan_.racers().empty() && !hedging && !plan_.has_restarts()) {
    quota_round(record);
  } else {
    event_round(record, rule);
  }
  return record;
}

void Simulation::quota_round(RoundRecord& record) {
  const auto tasks = plan_.quotas().tasks();
  double wall = 0.0;
  double work = 0.0;
  double loss = 0.0;
  results_.resize(batch_);
  std::size_t index = 0;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    if (tasks[i] == 0) continue;
    double busy = 0.0;
    for (std::size_t t = 0; t < tasks[i]; ++t) {
      const double seconds = models_[i].sample(streams_[i]);
      policy_.observe(i, seconds);
      if (keep_copies_) copy_log_.push_back({i, index, busy, busy + seconds});
      busy += seconds;
      results_[index++] = {i, busy};
    }
    wall = std::max(wall, busy);
    work += busy;
    loss = std::max(loss, static_cast<double>(tasks[i]) * means_[i]);
  }
  record.wall_time = wall;
  record.worker_time = work;
  record.proxy_loss = loss;
}

// The round as events in virtual time: copies end in time order (ties by lower worker index);
// between ends the hedging rule is asked whenever a worker is free, and the clock also stops
// when a running copy becomes overdue.
void Simulation::event_round(RoundRecord& record, const BackupRule& rule) {
  const auto quotas = plan_.quotas().tasks();
  const std::size_t n = quotas.size();
  const bool hedging = rule.options().enabled() && !fungible_;
  if (fungible_) {
    results_.clear();
  } else {
    results_.assign(batch_, TaskResult{});
    task_copies_.assign(batch_, 0);
    task_started_.assign(batch_, 0);
  }
  events_.clear();
  restarted_in_row_.assign(n, 0);
  std::size_t index = 0;
  for (std::size_t i = 0; i < n; ++i) {
    queue_[i].clear();
    for (std::size_t t = 0; t < quotas[i]; ++t) queue_[i].push_back(index++);
    queue_head_[i] = 0;
    copies_[i].running = false;
  }
  next_task_ = index;  // the race's pool starts after the quotas
  for (std::size_t i = 0; i < n; ++i) continue_on(i, 0.0);
  double now = 0.0;
  double work = 0.0;
  std::size_t remaining = batch_;
  const auto describe = [&] {
    for (std::size_t i = 0; i < n; ++i) {
      const Copy& c = copies_[i];
      BackupWorker& v = view_[i];
      v.mean = policy_.stats(i).mean();
      v.unstarted = queue_[i].size() - queue_head_[i];
      v.running = c.running;
      v.elapsed = c.running ? now - c.start : 0.0;
      v.copies = c.running ? task_copies_[c.task] : 0;
      // A worker the plan gave nothing never helps, so that hedging never undoes its choice.
      v.available = (quotas[i] > 0 || plan_.is_racer(i)) && !c.running && v.unstarted == 0;
    }
  };
  while (remaining > 0) {
    double wake = std::numeric_limits<double>::infinity();
    if (hedging) {
      describe();
      for (BackupAction a = rule.next(view_); a.kind != BackupAction::Kind::none;
           a = rule.next(view_)) {
        if (a.kind == BackupAction::Kind::take_over) {
          const std::size_t task = queue_[a.from].back();
          queue_[a.from].pop_back();
          start_copy(a.worker, task, now);
          ++record.takeovers;
        } else {
          start_copy(a.worker, copies_[a.from].task, now);
          ++record.backup_copies;
        }
        describe();
      }
      wake = now + rule.time_to_next_overdue(view_);
    }
    // Stale events (copies stopped since) are dropped; one valid event is always pending,
    // since a task without a result has a copy running or queued behind a running one.
    while (!events_.empty() && events_.front().sequence != sequence_[events_.front().worker]) {
      std::pop_heap(events_.begin(), events_.end(), later<Event>);
      events_.pop_back();
    }
    if (events_.empty()) {
      throw Error("policy '" + std::string(policy_.name()) + "' planned a round that cannot end");
    }
    const Event next = events_.front();
    if (wake < next.at) {
      // The rule answers from elapsed times computed as now - start: step past rounding.
      now = std::max(wake, std::nextafter(now, std::numeric_limits<double>::infinity()));
      continue;
    }
    std::pop_heap(events_.begin(), events_.end(), later<Event>);
    events_.pop_back();
    now = next.at;
    const std::size_t w = next.worker;
    const std::size_t task = copies_[w].task;
    if (next.restart) {
      const double ran = end_copy(w, now, CopyRecord::Outcome::restarted);
      work += ran;
      policy_.observe_censored(w, ran);
      ++record.restarts;
      ++restarted_in_row_[w];
      start_copy(w, task, now);
      continue;
    }
    const double duration = end_copy(w, now, CopyRecord::Outcome::accepted);
    work += duration;
    policy_.observe(w, duration);
    ++completed_[w];
    --remaining;
    if (fungible_) {
      results_.push_back({w, now});
    } else {
      results_[task] = {w, now};
      // The first copy to finish wins: the others stop, and their workers go on.
      for (std::size_t u = 0; u < n && task_copies_[task] > 0; ++u) {
        if (!copies_[u].running || copies_[u].task != task) continue;
        const double ran = end_copy(u, now, CopyRecord::Outcome::stopped);
        work += ran;
        ++record.stopped_copies;
        policy_.observe_censored(u, ran);
        continue_on(u, now);
      }
    }
    // A racer of a fungible race starts its next sample at once, even after the B-th result:
    // it cannot know the round is over (and its stream stays where it would be).
    continue_on(w, now);
  }
  // A fungible round stops what still runs; an indexed one has nothing left running.
  for (std::size_t u = 0; u < n; ++u) {
    if (!copies_[u].running) continue;
    const double ran = end_copy(u, now, CopyRecord::Outcome::stopped);
    work += ran;
    if (ran > 0.0) policy_.observe_censored(u, ran);
  }
  for (std::size_t t = 0; !fungible_ && t < batch_; ++t) {
    record.most_copies = std::max(record.most_copies, task_started_[t]);
  }
  record.wall_time = now;
  record.worker_time = work;
  record.proxy_loss =
      plan_.racers().empty() ? plan_.quotas().proxy_loss(means_) : completed_proxy_loss();
}

void Simulation::continue_on(std::size_t worker, double now) {
  if (queue_head_[worker] < queue_[worker].size()) {
    start_copy(worker, queue_[worker][queue_head_[worker]++], now);
  } else if (plan_.is_racer(worker) && (fungible_ || next_task_ < batch_)) {
    start_copy(worker, next_task_++, now);
  }
}

void Simulation::start_copy(std::size_t worker, std::size_t task, double now) {
  const double duration = models_[worker].sample(streams_[worker]);
  copies_[worker] = {task, now, duration, true};
  if (!fungible_) {
    ++task_copies_[task];
    ++task_started_[task];
  }
  const double budget = plan_.restart_budget(worker, restarted_in_row_[worker]);
  const bool restart = budget < duration;
  events_.push_back({now + (restart ? budget : duration), worker, ++sequence_[worker], restart});
  std::push_heap(events_.begin(), events_.end(), later<Event>);
}

double Simulation::end_copy(std::size_t worker, double now, CopyRecord::Outcome outcome) {
  Copy& c = copies_[worker];
  c.running = false;
  if (outcome != CopyRecord::Outcome::restarted) restarted_in_row_[worker] = 0;
  ++sequence_[worker];
  if (!fungible_) --task_copies_[c.task];
  // A finished copy ran its draw exactly; `now - start` would carry the clock's rounding.
  const double ran = outcome == CopyRecord::Outcome::accepted ? c.duration : now - c.start;
  // A sample a fungible racer started at the round's last result never ran: not a copy.
  if (keep_copies_ && now > c.start) copy_log_.push_back({worker, c.task, c.start, now, outcome});
  return ran;
}

double Simulation::completed_proxy_loss() const {
  double loss = 0.0;
  for (std::size_t i = 0; i < completed_.size(); ++i) {
    if (completed_[i] > 0) loss = std::max(loss, static_cast<double>(completed_[i]) * means_[i]);
  }
  return loss;
}

}  // namespace ata::sim

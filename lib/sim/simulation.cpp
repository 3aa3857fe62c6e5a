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
using Event = std::pair<double, std::size_t>;  // (finish time, worker): ties by lower index
constexpr auto kLater = std::greater<Event>{};

// Heap order of the backup round's events: earliest finish first, ties by lower worker index.
template <class CopyEvent>
bool finishes_later(const CopyEvent& a, const CopyEvent& b) {
  return a.finish != b.finish ? a.finish > b.finish : a.worker > b.worker;
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
      allocation_(scenario_.workers()),
      completed_(scenario_.workers(), 0),
      in_flight_(scenario_.workers(), 0.0),
      rule_(backups),
      copies_(scenario_.workers()),
      queue_(scenario_.workers()),
      queue_head_(scenario_.workers(), 0),
      sequence_(scenario_.workers(), 0),
      has_share_(scenario_.workers(), 0),
      view_(scenario_.workers()) {
  if (batch < 1) throw InvalidArgument("batch size B must be >= 1, got 0");
  if (policy.workers() != scenario_.workers()) {
    throw InvalidArgument("policy '" + std::string(policy.name()) + "' has " +
                          std::to_string(policy.workers()) + " workers but scenario '" +
                          scenario_.name() + "' has " + std::to_string(scenario_.workers()));
  }
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
  switch (policy_.dispatch()) {
    case Dispatch::allocated:
      if (rule_.options().enabled) {
        backup_round(record);
      } else {
        allocated_round(record);
      }
      break;
    case Dispatch::greedy:
      results_.clear();
      greedy_round(record);
      break;
    case Dispatch::pull:
      results_.clear();
      pull_round(record);
      break;
  }
  return record;
}

void Simulation::allocated_round(RoundRecord& record) {
  policy_.allocate(batch_, allocation_);
  const auto tasks = allocation_.tasks();
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

// The allocated round as events in virtual time: copies finish in time order (ties by lower
// worker index); between finishes the backup rule is asked whenever a worker with a share is
// idle, and the clock also stops when a running copy becomes overdue.
void Simulation::backup_round(RoundRecord& record) {
  policy_.allocate(batch_, allocation_);
  const auto tasks = allocation_.tasks();
  const std::size_t n = tasks.size();
  results_.assign(batch_, TaskResult{});
  task_copies_.assign(batch_, 0);
  task_started_.assign(batch_, 0);
  events_.clear();
  std::size_t index = 0;
  double loss = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    queue_[i].clear();
    for (std::size_t t = 0; t < tasks[i]; ++t) queue_[i].push_back(index++);
    queue_head_[i] = 0;
    copies_[i].running = false;
    has_share_[i] = tasks[i] > 0;
    if (tasks[i] > 0) loss = std::max(loss, static_cast<double>(tasks[i]) * means_[i]);
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (tasks[i] > 0) start_copy(i, queue_[i][queue_head_[i]++], 0.0);
  }
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
      v.available = has_share_[i] && !c.running && v.unstarted == 0;
    }
  };
  const auto later = finishes_later<Event>;
  while (remaining > 0) {
    describe();
    for (BackupAction a = rule_.next(view_); a.kind != BackupAction::Kind::none;
         a = rule_.next(view_)) {
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
    const double wake = now + rule_.time_to_next_overdue(view_);
    // Stale events (copies stopped since) are dropped; one valid event is always pending,
    // since a task without a result has a copy running or queued behind a running one.
    while (!events_.empty() && events_.front().sequence != sequence_[events_.front().worker]) {
      std::pop_heap(events_.begin(), events_.end(), later);
      events_.pop_back();
    }
    const Event next = events_.front();
    if (wake < next.finish) {
      // The rule answers from elapsed times computed as now - start: step past rounding.
      now = std::max(wake, std::nextafter(now, std::numeric_limits<double>::infinity()));
      continue;
    }
    std::pop_heap(events_.begin(), events_.end(), later);
    events_.pop_back();
    now = next.finish;
    const std::size_t w = next.worker;
    Copy& done = copies_[w];
    done.running = false;
    ++sequence_[w];
    work += done.duration;
    results_[done.task] = {w, now};
    --remaining;
    policy_.observe(w, done.duration);
    --task_copies_[done.task];
    for (std::size_t u = 0; u < n && task_copies_[done.task] > 0; ++u) {
      Copy& other = copies_[u];
      if (!other.running || other.task != done.task) continue;
      const double ran = now - other.start;
      other.running = false;
      ++sequence_[u];
      --task_copies_[done.task];
      work += ran;
      ++record.stopped_copies;
      policy_.observe_censored(u, ran);
      if (queue_head_[u] < queue_[u].size()) start_copy(u, queue_[u][queue_head_[u]++], now);
    }
    if (queue_head_[w] < queue_[w].size()) start_copy(w, queue_[w][queue_head_[w]++], now);
  }
  for (const std::size_t started : task_started_) {
    record.most_copies = std::max(record.most_copies, started);
  }
  record.wall_time = now;
  record.worker_time = work;
  record.proxy_loss = loss;
}

void Simulation::start_copy(std::size_t worker, std::size_t task, double now) {
  const double duration = models_[worker].sample(streams_[worker]);
  copies_[worker] = {task, now, duration, true};
  ++task_copies_[task];
  ++task_started_[task];
  events_.push_back({now + duration, worker, ++sequence_[worker]});
  std::push_heap(events_.begin(), events_.end(), finishes_later<Event>);
}

void Simulation::greedy_round(RoundRecord& record) {
  const std::size_t n = models_.size();
  heap_.clear();
  for (std::size_t i = 0; i < n; ++i) {
    in_flight_[i] = models_[i].sample(streams_[i]);
    heap_.emplace_back(in_flight_[i], i);
  }
  std::make_heap(heap_.begin(), heap_.end(), kLater);
  std::fill(completed_.begin(), completed_.end(), std::size_t{0});
  double now = 0.0;
  for (std::size_t done = 0; done < batch_; ++done) {
    std::pop_heap(heap_.begin(), heap_.end(), kLater);
    auto& [finish, worker] = heap_.back();
    now = finish;
    policy_.observe(worker, in_flight_[worker]);
    ++completed_[worker];
    in_flight_[worker] = models_[worker].sample(streams_[worker]);
    finish += in_flight_[worker];
    std::push_heap(heap_.begin(), heap_.end(), kLater);
  }
  record.wall_time = now;
  record.worker_time = static_cast<double>(n) * now;
  record.proxy_loss = completed_proxy_loss();
}

void Simulation::pull_round(RoundRecord& record) {
  const std::size_t n = models_.size();
  heap_.clear();
  std::fill(completed_.begin(), completed_.end(), std::size_t{0});
  const std::size_t first = std::min(n, batch_);
  for (std::size_t i = 0; i < first; ++i) {
    in_flight_[i] = models_[i].sample(streams_[i]);
    heap_.emplace_back(in_flight_[i], i);
  }
  std::make_heap(heap_.begin(), heap_.end(), kLater);
  std::size_t queued = batch_ - first;
  double now = 0.0;
  double work = 0.0;
  while (!heap_.empty()) {
    std::pop_heap(heap_.begin(), heap_.end(), kLater);
    const auto [finish, worker] = heap_.back();
    heap_.pop_back();
    now = finish;
    policy_.observe(worker, in_flight_[worker]);
    work += in_flight_[worker];
    ++completed_[worker];
    if (queued > 0) {
      --queued;
      in_flight_[worker] = models_[worker].sample(streams_[worker]);
      heap_.emplace_back(finish + in_flight_[worker], worker);
      std::push_heap(heap_.begin(), heap_.end(), kLater);
    }
  }
  record.wall_time = now;
  record.worker_time = work;
  record.proxy_loss = completed_proxy_loss();
}

double Simulation::completed_proxy_loss() const {
  double loss = 0.0;
  for (std::size_t i = 0; i < completed_.size(); ++i) {
    if (completed_[i] > 0) loss = std::max(loss, static_cast<double>(completed_[i]) * means_[i]);
  }
  return loss;
}

}  // namespace ata::sim

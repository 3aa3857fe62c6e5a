#include "ata/sim/simulation.hpp"

#include <algorithm>
#include <functional>
#include <string>

#include "ata/core/error.hpp"
#include "ata/core/solver.hpp"

namespace ata::sim {

namespace {
using Event = std::pair<double, std::size_t>;  // (finish time, worker): ties by lower index
constexpr auto kLater = std::greater<Event>{};
}  // namespace

Simulation::Simulation(Scenario scenario, Policy& policy, std::size_t batch, std::uint64_t seed)
    : scenario_(std::move(scenario)),
      policy_(policy),
      oracle_(dynamic_cast<OraclePolicy*>(&policy)),
      eofta_(dynamic_cast<EoftaPolicy*>(&policy)),
      batch_(batch),
      models_(scenario_.models().begin(), scenario_.models().end()),
      means_(scenario_.means()),
      allocation_(scenario_.workers()),
      completed_(scenario_.workers(), 0),
      in_flight_(scenario_.workers(), 0.0) {
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
    const WorkerChange& c = changes[next_change_++];
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
    case Dispatch::allocated: allocated_round(record); break;
    case Dispatch::greedy: greedy_round(record); break;
    case Dispatch::pull: pull_round(record); break;
  }
  return record;
}

void Simulation::allocated_round(RoundRecord& record) {
  policy_.allocate(batch_, allocation_);
  const auto tasks = allocation_.tasks();
  double wall = 0.0;
  double work = 0.0;
  double loss = 0.0;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    if (tasks[i] == 0) continue;
    double busy = 0.0;
    for (std::size_t t = 0; t < tasks[i]; ++t) {
      const double seconds = models_[i].sample(streams_[i]);
      policy_.observe(i, seconds);
      busy += seconds;
    }
    wall = std::max(wall, busy);
    work += busy;
    loss = std::max(loss, static_cast<double>(tasks[i]) * means_[i]);
  }
  record.wall_time = wall;
  record.worker_time = work;
  record.proxy_loss = loss;
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

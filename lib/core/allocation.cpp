#include "ata/core/allocation.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "ata/core/error.hpp"
#include "core/checks.hpp"

namespace ata {

Allocation::Allocation(std::vector<std::size_t> tasks)
    : tasks_(std::move(tasks)), total_(std::accumulate(tasks_.begin(), tasks_.end(), std::size_t{0})) {}

std::size_t Allocation::at(std::size_t worker) const {
  detail::require_worker_index(worker, tasks_.size());
  return tasks_[worker];
}

std::vector<std::size_t> Allocation::support() const {
  std::vector<std::size_t> workers;
  for (std::size_t i = 0; i < tasks_.size(); ++i) {
    if (tasks_[i] > 0) workers.push_back(i);
  }
  return workers;
}

double Allocation::proxy_loss(std::span<const double> lambda) const {
  if (lambda.size() != tasks_.size()) {
    throw InvalidArgument("proxy_loss: got " + std::to_string(lambda.size()) +
                          " values for an allocation over " + std::to_string(tasks_.size()) +
                          " workers");
  }
  double loss = 0.0;
  for (std::size_t i = 0; i < tasks_.size(); ++i) {
    if (std::isnan(lambda[i]) || lambda[i] < 0.0) {
      throw InvalidArgument("proxy_loss: lambda[" + std::to_string(i) + "] must be >= 0, got " +
                            detail::to_text(lambda[i]));
    }
    if (tasks_[i] > 0) loss = std::max(loss, static_cast<double>(tasks_[i]) * lambda[i]);
  }
  return loss;
}

void Allocation::add(std::size_t worker, std::size_t count) {
  detail::require_worker_index(worker, tasks_.size());
  tasks_[worker] += count;
  total_ += count;
}

void Allocation::set(std::size_t worker, std::size_t count) {
  detail::require_worker_index(worker, tasks_.size());
  total_ = total_ - tasks_[worker] + count;
  tasks_[worker] = count;
}

void Allocation::clear() noexcept {
  std::fill(tasks_.begin(), tasks_.end(), std::size_t{0});
  total_ = 0;
}

}  // namespace ata

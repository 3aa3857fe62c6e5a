#pragma once
/// @file
/// An allocation: how many of a batch's tasks each worker runs.

#include <cstddef>
#include <span>
#include <vector>

namespace ata {

/// The number of tasks a_i given to each of n workers in one round.
///
/// @code
/// ata::Allocation a(3);       // three workers, no tasks yet
/// a.add(0, 2);
/// a.add(2);
/// // a.total() == 3, a.support() == {0, 2}
/// double loss = a.proxy_loss(std::vector<double>{1.0, 5.0, 4.0});  // max(2*1, 1*4) = 4
/// @endcode
///
/// A plain value type: copies are independent; not synchronised.
class Allocation {
 public:
  Allocation() = default;
  /// `workers` workers with no tasks.
  explicit Allocation(std::size_t workers) : tasks_(workers, 0) {}
  /// From explicit per-worker task counts.
  explicit Allocation(std::vector<std::size_t> tasks);

  /// Number of workers n (not the number of tasks: see total()).
  [[nodiscard]] std::size_t size() const noexcept { return tasks_.size(); }
  /// Number of tasks, sum_i a_i.
  [[nodiscard]] std::size_t total() const noexcept { return total_; }
  /// Tasks of worker `worker`; throws ata::InvalidArgument when out of range.
  [[nodiscard]] std::size_t at(std::size_t worker) const;
  /// Tasks of worker `worker`, unchecked.
  [[nodiscard]] std::size_t operator[](std::size_t worker) const noexcept { return tasks_[worker]; }
  /// Indices of the workers with at least one task, ascending.
  [[nodiscard]] std::vector<std::size_t> support() const;
  /// Per-worker counts.
  [[nodiscard]] std::span<const std::size_t> tasks() const noexcept { return tasks_; }

  /// The proxy loss l(a, lambda) = max_i a_i * lambda_i (0 for an empty allocation).
  /// Throws ata::InvalidArgument if lambda has another size or holds NaN or negative values.
  [[nodiscard]] double proxy_loss(std::span<const double> lambda) const;

  /// Adds `count` tasks to worker `worker`; throws ata::InvalidArgument when out of range.
  void add(std::size_t worker, std::size_t count = 1);
  /// Sets worker `worker`'s tasks to `count`; throws ata::InvalidArgument when out of range.
  void set(std::size_t worker, std::size_t count);
  /// Removes every task, keeping the number of workers.
  void clear() noexcept;

  [[nodiscard]] auto begin() const noexcept { return tasks_.begin(); }
  [[nodiscard]] auto end() const noexcept { return tasks_.end(); }

  friend bool operator==(const Allocation&, const Allocation&) = default;

 private:
  std::vector<std::size_t> tasks_;
  std::size_t total_ = 0;
};

}  // namespace ata

#pragma once
/// @file
/// The Policy interface: one object decides every round's allocation and learns from the
/// measured task times. The simulator, the thread pool and the MPI back-end drive the same
/// policy objects through this interface.

#include <cstddef>
#include <mutex>
#include <span>
#include <string_view>
#include <vector>

#include "ata/core/allocation.hpp"
#include "ata/core/worker_stats.hpp"

namespace ata {

/// How a strategy hands out a batch's tasks.
enum class Dispatch {
  allocated,  ///< allocate() fixes a_i per worker; each worker runs its a_i tasks in a row.
  greedy,     ///< GTA: every worker computes until B results are in; the surplus is discarded.
  pull,       ///< A shared queue of exactly B tasks that idle workers pull: a classic pool.
};

/// A task allocation strategy.
///
/// @code
/// ata::AtaPolicy policy(/*workers=*/4, /*alpha=*/2.0);
/// for (int round = 0; round < 100; ++round) {
///   ata::Allocation a = policy.allocate(/*batch=*/8);
///   for (std::size_t i = 0; i < a.size(); ++i)
///     for (std::size_t t = 0; t < a[i]; ++t) policy.observe(i, run_task_on(i));
/// }
/// @endcode
///
/// The round counter k starts at 0 and allocate() advances it, so the first allocation is
/// round 1. observe() may be called at any time, in any order of workers.
///
/// Not thread-safe by itself: one thread at a time may call its methods. Every driver of the
/// runtime (ata::runtime::BatchScheduler) holds mutex() while it calls the policy, so several
/// schedulers, on any threads, may share one policy; hold mutex() yourself to read or drive a
/// policy that schedulers are using.
class Policy {
 public:
  virtual ~Policy() = default;
  Policy(const Policy&) = delete;
  Policy& operator=(const Policy&) = delete;

  /// Short name as the apps spell it: "ata", "ata-e", "ata-auto", "ofta", "uta", "gta", "pull".
  [[nodiscard]] virtual std::string_view name() const noexcept = 0;
  /// Whether the strategy allocates (the default) or dispatches dynamically.
  [[nodiscard]] virtual Dispatch dispatch() const noexcept { return Dispatch::allocated; }

  /// Number of workers n.
  [[nodiscard]] std::size_t workers() const noexcept { return stats_.size(); }
  /// Rounds allocated so far.
  [[nodiscard]] std::size_t round() const noexcept { return round_; }

  /// Starts the next round and returns its allocation of `batch` tasks (sum = batch).
  /// Throws ata::InvalidArgument for batch = 0, and ata::Error when dispatch() is not
  /// Dispatch::allocated. If the strategy's choose() throws, the exception propagates and
  /// round() is left unchanged, so the next allocate() starts the same round.
  [[nodiscard]] Allocation allocate(std::size_t batch);
  /// As allocate(), writing into `out` to reuse its storage.
  void allocate(std::size_t batch, Allocation& out);
  /// Load-aware: as allocate(), for a batch that queues behind other work. backlog[i] is the
  /// number of tasks worker i must still finish first (queued and running tasks of other
  /// batches). A load-aware policy minimises max_i (q_i + a_i s_i) with q_i = backlog[i] s_i
  /// from its own estimates (ATA, ATA-Empirical, OFTA); one that is not (UTA) ignores it. All
  /// zeros give exactly allocate()'s result. Throws ata::InvalidArgument for a backlog of
  /// another size or with a NaN, infinite or negative entry (nothing changes then).
  void allocate(std::size_t batch, std::span<const double> backlog, Allocation& out);

  /// Records that one task on `worker` took `seconds`. Throws ata::InvalidArgument for a
  /// worker index out of range or a duration that is NaN, infinite or negative.
  void observe(std::size_t worker, double seconds);

  /// Statistics of the durations observed from `worker` (throws when out of range).
  [[nodiscard]] const WorkerStats& stats(std::size_t worker) const;
  /// Statistics of every worker, by index.
  [[nodiscard]] std::span<const WorkerStats> all_stats() const noexcept { return stats_; }

  /// The lock of whoever drives this policy: schedulers hold it around every call they make.
  [[nodiscard]] std::mutex& mutex() const noexcept { return mutex_; }

 protected:
  /// Throws ata::InvalidArgument when workers = 0.
  explicit Policy(std::size_t workers);

  /// Fills `out` (already sized to workers() and empty) for round(), which is already advanced.
  virtual void choose(std::size_t batch, Allocation& out) = 0;
  /// During choose(): the backlog given to allocate(), one entry per worker, or empty when
  /// there is none (every worker idle).
  [[nodiscard]] std::span<const double> backlog() const noexcept { return backlog_; }
  /// Hook after stats(worker) has absorbed a valid observation.
  virtual void learn(std::size_t /*worker*/, double /*seconds*/) {}

 private:
  std::vector<WorkerStats> stats_;
  std::size_t round_ = 0;
  std::span<const double> backlog_;  // set for the duration of a load-aware allocate()
  mutable std::mutex mutex_;
};

}  // namespace ata

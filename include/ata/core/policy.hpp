#pragma once
/// @file
/// The Policy interface: one object plans every round (ata::Plan: quotas, races, backups,
/// restarts) and learns from the measured task times, complete and censored. The simulator,
/// the thread pool and the MPI back-end drive the same policy objects through this interface.

#include <cstddef>
#include <mutex>
#include <span>
#include <string_view>
#include <vector>

#include "ata/core/allocation.hpp"
#include "ata/core/plan.hpp"
#include "ata/core/worker_stats.hpp"

namespace ata {

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
/// Each round starts with plan() (or, for a strategy whose plans are quotas, allocate(): the
/// plan's quotas). The round counter k starts at 0 and plan() advances it, so the first plan
/// is round 1's. observe() may be called at any time, in any order of workers. A strategy
/// that allocates implements choose(); one that plans races, backups or restarts implements
/// choose_plan().
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
  /// Number of workers n.
  [[nodiscard]] std::size_t workers() const noexcept { return stats_.size(); }
  /// Rounds started so far (by plan() or allocate()).
  [[nodiscard]] std::size_t round() const noexcept { return round_; }

  /// Starts the next round and returns its plan for `batch` tasks. Throws
  /// ata::InvalidArgument for batch = 0. If the strategy throws, the exception propagates and
  /// round() is left unchanged, so the next call starts the same round.
  [[nodiscard]] Plan plan(std::size_t batch);
  /// As plan(), writing into `out` to reuse its storage.
  void plan(std::size_t batch, Plan& out);
  /// Load-aware: as plan(), for a batch that queues behind other work; `backlog` as for the
  /// load-aware allocate() below.
  void plan(std::size_t batch, std::span<const double> backlog, Plan& out);

  /// Starts the next round and returns its allocation of `batch` tasks (sum = batch): the
  /// quotas of its plan. Throws ata::InvalidArgument for batch = 0, and ata::Error when the
  /// plan has racers (GTA, pull: call plan()), leaving round() unchanged.
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
  /// Records that a task on `worker` ran at least `seconds` and was stopped unfinished (a
  /// backup copy elsewhere finished first): a censored observation. It goes to stats(worker)'s
  /// censored count and sum, never into its mean; a learner may use it (ata-auto does; the
  /// paper's ATA and ATA-Empirical ignore it: their confidence bounds assume complete samples).
  /// Throws ata::InvalidArgument for a worker index out of range or a duration that is NaN,
  /// infinite or negative.
  void observe_censored(std::size_t worker, double seconds);
  /// Records the tasks summarised by `chunk` (their count, mean, variance and sum) as run on
  /// `worker`: the statistics become, to rounding, what observe() of each of them would give.
  /// This is how the runtime reports a batch: one summary per worker, built by the worker
  /// while it ran, so that learning costs O(n) per batch rather than O(B). Throws
  /// ata::InvalidArgument for a worker index out of range, and ata::Error when
  /// needs_every_sample() (nothing changes then). An empty chunk changes nothing.
  void observe_summary(std::size_t worker, const WorkerStats& chunk);
  /// Whether the policy must see each duration through observe() (its learn() keeps more than
  /// the statistics can tell: a window of recent times, a change test), rather than one
  /// summary per chunk through observe_summary(). True by default, so that a policy with its
  /// own learn() keeps learning from every task; a policy whose learning is all in stats()
  /// (or in learn_summary()) returns false, and the runtime then learns in O(n) per batch.
  /// Every built-in policy does, except ATA-Auto.
  [[nodiscard]] virtual bool needs_every_sample() const noexcept { return true; }

  /// Statistics of the durations observed from `worker` (throws when out of range).
  [[nodiscard]] const WorkerStats& stats(std::size_t worker) const;
  /// Statistics of every worker, by index.
  [[nodiscard]] std::span<const WorkerStats> all_stats() const noexcept { return stats_; }

  /// The lock of whoever drives this policy: schedulers hold it around every call they make.
  [[nodiscard]] std::mutex& mutex() const noexcept { return mutex_; }

 protected:
  /// Throws ata::InvalidArgument when workers = 0.
  explicit Policy(std::size_t workers);

  /// Fills `out` (sized to workers(), every worker idle, nothing else set) for round(), which
  /// is already advanced. By default: quotas from choose().
  virtual void choose_plan(std::size_t batch, Plan& out);
  /// Fills `out` (already sized to workers() and empty) for round(), which is already
  /// advanced: the quotas of the default choose_plan(). A strategy overriding choose_plan()
  /// need not implement it (the default throws ata::Error).
  virtual void choose(std::size_t batch, Allocation& out);
  /// During choose_plan() and choose(): the backlog given to plan() or allocate(), one entry
  /// per worker, or empty when there is none (every worker idle).
  [[nodiscard]] std::span<const double> backlog() const noexcept { return backlog_; }
  /// Hook after stats(worker) has absorbed a valid observation.
  virtual void learn(std::size_t /*worker*/, double /*seconds*/) {}
  /// Hook after stats(worker) has absorbed a valid censored observation.
  virtual void learn_censored(std::size_t /*worker*/, double /*seconds*/) {}
  /// Hook after stats(worker) has absorbed a non-empty summary (observe_summary()); only
  /// called when needs_every_sample() is false.
  virtual void learn_summary(std::size_t /*worker*/, const WorkerStats& /*chunk*/) {}

 private:
  // Starts the round around choose_plan(); `backlog` is set for its duration.
  void start_round(std::size_t batch, std::span<const double> backlog, Plan& out);
  // allocate(): the quotas of the round's plan, which must have no racer.
  void allocate_from(std::size_t batch, std::span<const double> backlog, Allocation& out);

  std::vector<WorkerStats> stats_;
  std::size_t round_ = 0;
  Plan allocating_;  // allocate()'s plan, kept for its storage
  std::span<const double> backlog_;  // set for the duration of a load-aware allocate()
  mutable std::mutex mutex_;
};

}  // namespace ata

#pragma once
/// @file
/// The configuration of a WorkerPool: worker count, slowdowns, core pinning, run seed.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "ata/models/scenario.hpp"
#include "ata/runtime/slowdown.hpp"

namespace ata::runtime {

/// Describes the workers of a pool, with fluent setters.
///
/// @code
/// using namespace std::chrono_literals;
/// // The simulator's "linear" cluster of 8 workers, 1 model unit = 50 us of sleep.
/// auto options = ata::runtime::PoolOptions::from_scenario(ata::models::make_preset("linear", 8),
/// 50us); options.set_seed(7).set_cpu(0, 0); ata::runtime::WorkerPool pool(options);
/// @endcode
///
/// A value type; not synchronised. The default seed is fixed, so runs are reproducible unless
/// the caller varies it.
class PoolOptions {
 public:
  /// See set_idle_spin(); docs/runtime.md has the measurements behind it.
  static constexpr std::chrono::nanoseconds kDefaultIdleSpin = std::chrono::microseconds(50);

  /// `workers` workers without slowdown, unpinned. Throws ata::InvalidArgument for 0.
  explicit PoolOptions(std::size_t workers);

  /// One worker per worker of `scenario`, each delaying its tasks by draws from its model
  /// (and from the scenario's later changes, by round), one model unit lasting `unit`.
  /// `kind` is Slowdown::Kind::sleep or burn; anything else throws ata::InvalidArgument.
  /// The true mean task times of such a pool, in seconds, are scenario.scaled(seconds per
  /// unit).means() plus the tasks' own time.
  [[nodiscard]] static PoolOptions from_scenario(const models::Scenario& scenario,
                                                 std::chrono::nanoseconds unit,
                                                 Slowdown::Kind kind = Slowdown::Kind::sleep);

  /// Worker `worker` applies `slowdown` to each task. Throws ata::InvalidArgument when out of
  /// range.
  PoolOptions& set_slowdown(std::size_t worker, Slowdown slowdown);
  /// Every worker applies `slowdown`.
  PoolOptions& set_all_slowdowns(const Slowdown& slowdown);
  /// Worker `worker` runs only on CPU `cpu` (Linux affinity). Pinning several workers to one
  /// CPU gives them unequal shares of the machine. The pool's constructor throws
  /// ata::InvalidArgument if the CPU is not available to the process; this throws for a
  /// worker out of range.
  PoolOptions& set_cpu(std::size_t worker, unsigned cpu);
  /// How long an idle worker polls its queue, and a caller of run() polls for the end of its
  /// batch, before going to sleep. Waking a sleeping thread costs tens of microseconds, more
  /// than a batch of small tasks; polling (which yields the core to any runnable thread) costs
  /// CPU time while idle. Zero never polls. Throws ata::InvalidArgument when negative.
  PoolOptions& set_idle_spin(std::chrono::nanoseconds spin);
  /// The run seed. Worker i draws its delays from models::Rng(seed, i), the stream the simulator
  /// gives its worker i: with the same seed, the u-th task worker i runs is delayed by the
  /// time its u-th task takes in ata::sim::Simulation.
  PoolOptions& set_seed(std::uint64_t seed) noexcept;
  /// Makes the last worker, n - 1, the caller lane: no thread of the pool's own, but each
  /// batch's caller, which runs that worker's share (or races as it) inline in a blocking
  /// BatchScheduler::run() before it waits for the rest. The policy learns it like any other
  /// worker. On a busy machine the caller is on a core when its batch starts, while a sleeping
  /// worker wakes a scheduler slice late; with backups (the default) the caller also takes over
  /// the tasks of workers that have not started theirs, so a small batch need not wait for a
  /// wake-up at all. So a pool of n workers runs n - 1 threads. Concurrent callers each run
  /// their own batch's share: worker n - 1 is a role, "this batch's caller", not a thread.
  /// Only a WorkerPool has one, and the caller lane takes no slowdown or CPU pinning (a
  /// caller has no identity the pool could give it): the pool's constructor throws
  /// ata::InvalidArgument for those, as do executor lanes given this option. async_run()
  /// batches leave the caller lane out (their caller does not wait), and late binding refuses
  /// a pool with one. A batch of quotas whose B tasks the caller is expected to run within
  /// kCallerAloneWork, by its learned mean, runs on the caller alone: waking a thread for it
  /// would cost more than the whole batch. Off by default.
  PoolOptions& set_caller_lane(bool on) noexcept;
  /// See set_caller_lane(): about what a sleeping thread takes to wake, and what a lane claims
  /// as one chunk of a tracked batch.
  static constexpr std::chrono::nanoseconds kCallerAloneWork = std::chrono::microseconds(20);

  [[nodiscard]] std::size_t workers() const noexcept { return slowdowns_.size(); }
  /// Throws ata::InvalidArgument when out of range.
  [[nodiscard]] const Slowdown& slowdown(std::size_t worker) const;
  /// The CPU worker `worker` is pinned to, if any; throws ata::InvalidArgument when out of range.
  [[nodiscard]] std::optional<unsigned> cpu(std::size_t worker) const;
  [[nodiscard]] std::uint64_t seed() const noexcept { return seed_; }
  [[nodiscard]] std::chrono::nanoseconds idle_spin() const noexcept { return idle_spin_; }
  /// Whether worker workers() - 1 is the caller lane (set_caller_lane()).
  [[nodiscard]] bool caller_lane() const noexcept { return caller_lane_; }

 private:
  std::vector<Slowdown> slowdowns_;
  std::vector<std::optional<unsigned>> cpus_;
  std::uint64_t seed_ = 0x5eed;
  std::chrono::nanoseconds idle_spin_ = kDefaultIdleSpin;
  bool caller_lane_ = false;
};

}  // namespace ata::runtime

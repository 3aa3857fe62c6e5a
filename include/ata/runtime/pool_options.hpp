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
  [[nodiscard]] std::size_t workers() const noexcept { return slowdowns_.size(); }
  /// Throws ata::InvalidArgument when out of range.
  [[nodiscard]] const Slowdown& slowdown(std::size_t worker) const;
  /// The CPU worker `worker` is pinned to, if any; throws ata::InvalidArgument when out of range.
  [[nodiscard]] std::optional<unsigned> cpu(std::size_t worker) const;
  [[nodiscard]] std::uint64_t seed() const noexcept { return seed_; }
  [[nodiscard]] std::chrono::nanoseconds idle_spin() const noexcept { return idle_spin_; }

 private:
  std::vector<Slowdown> slowdowns_;
  std::vector<std::optional<unsigned>> cpus_;
  std::uint64_t seed_ = 0x5eed;
  std::chrono::nanoseconds idle_spin_ = kDefaultIdleSpin;
};

}  // namespace ata::runtime

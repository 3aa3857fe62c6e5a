#pragma once
/// @file
/// The configuration of lanes: worker count, slowdowns, run seed, polling; and, for a
/// WorkerPool's own threads, core pinning.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "ata/models/scenario.hpp"
#include "ata/runtime/slowdown.hpp"

namespace ata::runtime {

class LaneOptions;
class PoolOptions;

namespace detail {

// What every kind of lanes takes: worker count, slowdowns, run seed, polling. The setters
// return the derived options, so that they chain with its own (PoolOptions::set_cpu()).
template <class Options>
class LaneOptionsBase {
 public:
  /// See set_idle_spin(); docs/runtime.md has the measurements behind it.
  static constexpr std::chrono::nanoseconds kDefaultIdleSpin = std::chrono::microseconds(50);

  /// One worker per worker of `scenario`, each delaying its tasks by draws from its model
  /// (and from the scenario's later changes, by round), one model unit lasting `unit`.
  /// `kind` is Slowdown::Kind::sleep or burn; anything else throws ata::InvalidArgument.
  /// The true mean task times of such lanes, in seconds, are scenario.scaled(seconds per
  /// unit).means() plus the tasks' own time.
  [[nodiscard]] static Options from_scenario(const models::Scenario& scenario,
                                             std::chrono::nanoseconds unit,
                                             Slowdown::Kind kind = Slowdown::Kind::sleep);

  /// Worker `worker` applies `slowdown` to each task. Throws ata::InvalidArgument when out of
  /// range.
  Options& set_slowdown(std::size_t worker, Slowdown slowdown);
  /// Every worker applies `slowdown`.
  Options& set_all_slowdowns(const Slowdown& slowdown);
  /// How long an idle worker polls its queue, and a caller of run() polls for the end of its
  /// batch, before going to sleep. Waking a sleeping thread costs tens of microseconds, more
  /// than a batch of small tasks; polling (which yields the core to any runnable thread) costs
  /// CPU time while idle. Zero never polls. On a busy machine polling stops by itself: once a
  /// yield has lost the core to another process for a millisecond, every poller of the process
  /// sleeps at once for the next 100 ms (a yielder gets its core back only at the end of that
  /// process's scheduler slice, a sleeper at once). Throws ata::InvalidArgument when negative.
  Options& set_idle_spin(std::chrono::nanoseconds spin);
  /// The run seed. Worker i draws its delays from models::Rng(seed, i), the stream the simulator
  /// gives its worker i: with the same seed, the u-th task worker i runs is delayed by the
  /// time its u-th task takes in ata::sim::Simulation.
  Options& set_seed(std::uint64_t seed) noexcept;
  [[nodiscard]] std::size_t workers() const noexcept { return slowdowns_.size(); }
  /// Throws ata::InvalidArgument when out of range.
  [[nodiscard]] const Slowdown& slowdown(std::size_t worker) const;
  [[nodiscard]] std::uint64_t seed() const noexcept { return seed_; }
  [[nodiscard]] std::chrono::nanoseconds idle_spin() const noexcept { return idle_spin_; }

 protected:
  // Throws ata::InvalidArgument for 0 workers.
  explicit LaneOptionsBase(std::size_t workers);

 private:
  std::vector<Slowdown> slowdowns_;
  std::uint64_t seed_ = 0x5eed;
  std::chrono::nanoseconds idle_spin_ = kDefaultIdleSpin;
};

}  // namespace detail

/// Describes the lanes of any kind, with fluent setters: those on threads they do not own
/// (PostedLanes, AsioLanes, ArenaLanes) and MPI ranks take these; a WorkerPool, whose threads
/// are its own, takes PoolOptions, which can also pin them.
///
/// @code
/// using namespace std::chrono_literals;
/// // Four lanes on an io_context's threads, lane 3 sleeping 1 ms more per task.
/// auto options = ata::runtime::LaneOptions(4).set_slowdown(
///     3, ata::runtime::Slowdown::sleep(ata::models::TimeModel::constant(1.0), 1ms));
/// ata::runtime::AsioLanes lanes(executors, options);
/// @endcode
///
/// A value type; not synchronised. The default seed is fixed, so runs are reproducible unless
/// the caller varies it.
class LaneOptions final : public detail::LaneOptionsBase<LaneOptions> {
 public:
  /// `workers` workers without slowdown. Throws ata::InvalidArgument for 0.
  explicit LaneOptions(std::size_t workers) : LaneOptionsBase(workers) {}
};

/// Describes the workers of a WorkerPool (or the threads of a CallerLanePool): LaneOptions and
/// core pinning. Lanes on threads they do not own cannot be pinned, so they take LaneOptions
/// and do not compile with these.
///
/// @code
/// using namespace std::chrono_literals;
/// // The simulator's "linear" cluster of 8 workers, 1 model unit = 50 us of sleep.
/// auto options = ata::runtime::PoolOptions::from_scenario(ata::models::make_preset("linear", 8),
/// 50us); options.set_seed(7).set_cpu(0, 0); ata::runtime::WorkerPool pool(options);
/// @endcode
///
/// A value type; not synchronised.
class PoolOptions final : public detail::LaneOptionsBase<PoolOptions> {
 public:
  /// `workers` workers without slowdown, unpinned. Throws ata::InvalidArgument for 0.
  explicit PoolOptions(std::size_t workers) : LaneOptionsBase(workers), cpus_(workers) {}
  /// The workers `lanes` describes, unpinned.
  explicit PoolOptions(const LaneOptions& lanes);

  /// Worker `worker` runs only on CPU `cpu` (Linux affinity). Pinning several workers to one
  /// CPU gives them unequal shares of the machine. The pool's constructor throws
  /// ata::InvalidArgument if the CPU is not available to the process; this throws for a
  /// worker out of range.
  PoolOptions& set_cpu(std::size_t worker, unsigned cpu);
  /// The CPU worker `worker` is pinned to, if any; throws ata::InvalidArgument when out of range.
  [[nodiscard]] std::optional<unsigned> cpu(std::size_t worker) const;

 private:
  std::vector<std::optional<unsigned>> cpus_;
};

extern template class detail::LaneOptionsBase<LaneOptions>;
extern template class detail::LaneOptionsBase<PoolOptions>;

}  // namespace ata::runtime

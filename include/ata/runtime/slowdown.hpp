#pragma once
/// @file
/// How much slower than its task a worker is: nothing, a simulated delay drawn from a time
/// model (slept or burnt on the CPU), or the task's own work repeated.

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "ata/models/random.hpp"
#include "ata/models/time_model.hpp"

namespace ata::runtime {

/// A worker's slowdown, applied to every task it runs.
///
/// @code
/// using namespace std::chrono_literals;
/// // Each task lasts 2 ms + Exp(mean 2 ms), its own run included; ten times slower from
/// // round 100 on.
/// auto model = ata::models::TimeModel::shifted_exponential(2.0, 2.0);
/// auto slow = ata::runtime::Slowdown::sleep(model, 1ms).change_at(100, model.scaled(10.0));
/// auto heavy = ata::runtime::Slowdown::repeat(3);  // runs each task three times
/// @endcode
///
/// - none: the task runs as it is.
/// - sleep: the task lasts a delay drawn from the model (in model units of `unit` each), as in
///   the simulator: after the task runs, the worker sleeps what is left of the delay (nothing
///   if the run took longer). Costs no CPU, so many such workers share few cores faithfully. A
///   timed wait wakes tens of microseconds late; each worker learns how late its own waits wake (a
///   running mean) and wakes that much early, at most half a delay, and takes what a wait still
///   overran off the next, so that delays average their draws: one may end a little early or
///   late, by the spread of the wake-ups.
/// - burn: as sleep, but the worker spins on the clock for what is left, keeping a core busy.
/// - repeat: the task runs `times` times in a row and the last result counts: real extra
///   work, slowed by whatever slows the task itself.
/// A delay ends early when the task's stop is requested (a discarded task stops costing).
/// A delay lasts at most kMaxDelay: a longer draw (a heavy tail, an infinite draw) is cut to
/// it, and a model whose mean delay exceeds it is refused.
/// For unequal shares of real cores, pin several workers to one core (PoolOptions::set_cpu).
///
/// A value type; const methods are thread-safe. Delays draw from the worker's own generator
/// (see PoolOptions::set_seed()), so a run seed reproduces every delay.
class Slowdown {
 public:
  enum class Kind { none, sleep, burn, repeat };

  /// The longest delay a task gets: one day.
  static constexpr std::chrono::nanoseconds kMaxDelay = std::chrono::hours(24);

  /// No slowdown.
  Slowdown() = default;
  [[nodiscard]] static Slowdown none() noexcept { return {}; }
  /// Each task lasts model.sample() * unit: it sleeps what its run left of it. Throws
  /// ata::InvalidArgument for unit <= 0 and for a mean delay model.mean() * unit above kMaxDelay.
  [[nodiscard]] static Slowdown sleep(models::TimeModel model,
                                      std::chrono::nanoseconds unit = std::chrono::milliseconds(1));
  /// As sleep(), spinning instead of sleeping. Throws ata::InvalidArgument as sleep().
  [[nodiscard]] static Slowdown burn(models::TimeModel model,
                                     std::chrono::nanoseconds unit = std::chrono::milliseconds(1));
  /// Runs each task `times` times; throws ata::InvalidArgument for times = 0.
  [[nodiscard]] static Slowdown repeat(std::size_t times);

  /// From round `round` (the scheduler's batch number, 1-based) on, delays draw from `model`,
  /// as models::WorkerChange does in the simulator. Throws ata::InvalidArgument for round 0, a
  /// slowdown that draws no delays (none, repeat), or a mean delay above kMaxDelay.
  Slowdown& change_at(std::size_t round, models::TimeModel model);

  [[nodiscard]] Kind kind() const noexcept { return kind_; }
  /// Real time of one model unit (sleep, burn).
  [[nodiscard]] std::chrono::nanoseconds unit() const noexcept { return unit_; }
  /// Runs per task: `times` for repeat, 1 otherwise.
  [[nodiscard]] std::size_t repetitions() const noexcept { return repetitions_; }
  /// Whether tasks are followed by a drawn delay (sleep, burn).
  [[nodiscard]] bool draws_delays() const noexcept {
    return kind_ == Kind::sleep || kind_ == Kind::burn;
  }
  /// The model in force in round `round` (1-based); throws ata::Error unless draws_delays().
  [[nodiscard]] const models::TimeModel& model(std::size_t round) const;
  /// Mean delay per task in round `round`, in real time (zero without delays).
  [[nodiscard]] std::chrono::duration<double> mean_delay(std::size_t round) const;
  /// One delay for a task of round `round`, drawn from `rng`, at most kMaxDelay; zero without
  /// delays.
  [[nodiscard]] std::chrono::nanoseconds draw(std::size_t round, models::Rng& rng) const;
  /// E.g. "sleep(exponential(mean=2) x 1ms, from round 100: exponential(mean=20))",
  /// "repeat(3)", "none".
  [[nodiscard]] std::string describe() const;

 private:
  struct Phase {
    std::size_t first_round;
    models::TimeModel model;
  };

  Kind kind_ = Kind::none;
  std::chrono::nanoseconds unit_{0};
  std::size_t repetitions_ = 1;
  std::vector<Phase> phases_;  // sorted by first_round; phases_[0] starts at round 1
};

}  // namespace ata::runtime

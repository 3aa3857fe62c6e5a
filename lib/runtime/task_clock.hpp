#pragma once
// The clock that times every task on its worker. Two reads per task would cost 40-50 ns with
// std::chrono::steady_clock (a vDSO call); the invariant TSC costs about a third of that. The
// TSC is used only where the CPU declares it invariant (constant rate, not stopped in sleep
// states) and a calibration against steady_clock gives two agreeing rates; steady_clock
// otherwise. ATA_TASK_CLOCK=steady in the environment forces steady_clock.

#include <chrono>
#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

namespace ata::runtime::detail {

class TaskClock {
 public:
  using Ticks = std::uint64_t;

  // Calibrated once per process, on first use (a few milliseconds). Thread-safe.
  static const TaskClock& instance();

  // A timestamp in ticks. Thread-safe; ticks from different threads are comparable (the
  // invariant TSC is synchronised across cores).
  [[nodiscard]] Ticks now() const noexcept {
#if defined(__x86_64__) || defined(__i386__)
    if (tsc_) return __rdtsc();
#endif
    return static_cast<Ticks>(std::chrono::steady_clock::now().time_since_epoch().count());
  }

  // The length of `elapsed` ticks.
  [[nodiscard]] std::chrono::nanoseconds to_duration(Ticks elapsed) const noexcept {
    if (!tsc_) return std::chrono::nanoseconds(static_cast<std::int64_t>(elapsed));
    return std::chrono::nanoseconds(
        static_cast<std::int64_t>(static_cast<double>(elapsed) * nanoseconds_per_tick_));
  }

  // Whether the TSC is in use (else steady_clock).
  [[nodiscard]] bool uses_tsc() const noexcept { return tsc_; }
  // Calibrated TSC rate in GHz (0 when steady_clock is in use).
  [[nodiscard]] double tsc_ghz() const noexcept { return tsc_ ? 1.0 / nanoseconds_per_tick_ : 0.0; }

 private:
  TaskClock();

  bool tsc_ = false;
  double nanoseconds_per_tick_ = 1.0;
};

}  // namespace ata::runtime::detail

#include "runtime/task_clock.hpp"

#include <cmath>
#include <cstdlib>
#include <string_view>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace ata::runtime::detail {

namespace {

#if defined(__x86_64__) || defined(__i386__)
// CPUID leaf 0x80000007, EDX bit 8: the TSC runs at a constant rate in every P-, C- and
// T-state (Linux's constant_tsc and nonstop_tsc flags).
bool invariant_tsc() {
  unsigned eax = 0;
  unsigned ebx = 0;
  unsigned ecx = 0;
  unsigned edx = 0;
  if (__get_cpuid(0x80000007, &eax, &ebx, &ecx, &edx) == 0) return false;
  return ((edx >> 8) & 1U) != 0;
}

struct Sample {
  std::chrono::steady_clock::time_point steady;
  double ticks;
};

// A steady_clock reading and the TSC at the same moment: the TSC is read on both sides and
// the pair retried while a preemption or an interrupt separates them.
Sample sample() {
  Sample s{};
  for (int attempt = 0; attempt < 100; ++attempt) {
    const auto before = __rdtsc();
    s.steady = std::chrono::steady_clock::now();
    const auto after = __rdtsc();
    s.ticks = 0.5 * (static_cast<double>(before) + static_cast<double>(after));
    if (after - before < 2000) break;
  }
  return s;
}

// TSC ticks per nanosecond over about `window` of steady_clock time.
double measure_rate(std::chrono::nanoseconds window) {
  const Sample start = sample();
  while (std::chrono::steady_clock::now() - start.steady < window) {
  }
  const Sample end = sample();
  return (end.ticks - start.ticks) /
         std::chrono::duration<double, std::nano>(end.steady - start.steady).count();
}
#endif

bool steady_forced() {
  const char* choice = std::getenv("ATA_TASK_CLOCK");
  return choice != nullptr && std::string_view(choice) == "steady";
}

}  // namespace

const TaskClock& TaskClock::instance() {
  static const TaskClock clock;
  return clock;
}

TaskClock::TaskClock() {
#if defined(__x86_64__) || defined(__i386__)
  if (steady_forced() || !invariant_tsc()) return;
  // Two consecutive windows must agree within 0.1% and give a plausible rate (0.1 to 10 GHz);
  // a few tries absorb a window spoilt by descheduling. A TSC that never agrees with
  // steady_clock is not used.
  constexpr auto kWindow = std::chrono::milliseconds(2);
  double previous = measure_rate(kWindow);
  for (int attempt = 0; attempt < 4; ++attempt) {
    const double rate = measure_rate(kWindow);
    if (rate > 0.1 && rate < 10.0 && std::abs(rate - previous) <= 0.001 * rate) {
      tsc_ = true;
      nanoseconds_per_tick_ = 2.0 / (rate + previous);
      return;
    }
    previous = rate;
  }
#else
  (void)steady_forced;
#endif
}

}  // namespace ata::runtime::detail

#pragma once
// Times in double seconds (a learned mean times a multiple, a rule's wait) and user durations
// (a deadline) onto the clocks' integer durations and time points, saturating: a time too
// long to represent becomes Duration::max() or TimePoint::max(), "never", instead of the
// undefined conversion or signed overflow that read as a moment in the past (issue 25: a
// timer that fired at once, over and over; every lane reported stuck; a deadline missed at
// once).

#include <chrono>
#include <cmath>
#include <limits>

namespace ata::runtime::detail {

// `seconds` as a Duration, rounded toward zero; +inf and anything beyond Duration::max()
// give max(), -inf and anything below min() give min(), NaN gives zero.
template <class Duration>
[[nodiscard]] Duration saturating_duration(double seconds) noexcept {
  using Rep = typename Duration::rep;
  using Period = typename Duration::period;
  static_assert(std::numeric_limits<Rep>::is_integer);
  const double ticks = seconds * static_cast<double>(Period::den) / static_cast<double>(Period::num);
  if (std::isnan(ticks)) return Duration::zero();
  // Rep's max() is not exactly a double: its nearest double, 2^63 for 64 bits, is one beyond
  // it, so a tick count at or above that bound is out of range.
  constexpr double kBound = static_cast<double>(std::numeric_limits<Rep>::max());
  if (ticks >= kBound) return Duration::max();
  if (ticks <= -kBound) return Duration::min();
  return Duration(static_cast<Rep>(ticks));
}

// `from` + `after`, or TimePoint::max() / min() where the sum leaves the clock's range.
template <class TimePoint>
[[nodiscard]] TimePoint saturating_add(TimePoint from,
                                       typename TimePoint::duration after) noexcept {
  using Duration = typename TimePoint::duration;
  const Duration since = from.time_since_epoch();
  if (after > Duration::zero() && since > Duration::max() - after) return TimePoint::max();
  if (after < Duration::zero() && since < Duration::min() - after) return TimePoint::min();
  return from + after;
}

// `from` + `seconds`, saturating as above.
template <class TimePoint>
[[nodiscard]] TimePoint saturating_after(TimePoint from, double seconds) noexcept {
  return saturating_add(from, saturating_duration<typename TimePoint::duration>(seconds));
}

}  // namespace ata::runtime::detail

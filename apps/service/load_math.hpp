#pragma once
// The arithmetic of ata-load: Poisson arrival times and latency percentiles.

#include <cstddef>
#include <span>
#include <vector>

#include "ata/models/random.hpp"

namespace ata::service {

/// The most arrivals one run may schedule (a bound on the memory a plan takes).
constexpr std::size_t kMostArrivals = 10'000'000;

/// Arrival times, in seconds from the start, of a Poisson process of `rate` arrivals per
/// second (independent exponential gaps of mean 1/rate, drawn from `rng`): those before
/// `duration` seconds, and at most `max_requests` of them (0: no count bound). Throws
/// ata::InvalidArgument for a rate or duration that is not finite and > 0, or when
/// rate * duration or max_requests is above kMostArrivals.
[[nodiscard]] std::vector<double> poisson_arrivals(double rate, double duration,
                                                   std::size_t max_requests, models::Rng& rng);

/// The q-quantile of ascending `sorted` values by the nearest-rank method: the smallest value
/// v such that at least q * n values are <= v (q = 0 gives the minimum). Throws
/// ata::InvalidArgument for no values or q outside [0, 1].
[[nodiscard]] double percentile(std::span<const double> sorted, double q);

/// Count, mean and the usual percentiles of a set of latencies (all zero when empty).
struct LatencySummary {
  std::size_t count = 0;
  double mean = 0.0;
  double p50 = 0.0;
  double p90 = 0.0;
  double p99 = 0.0;
  double max = 0.0;
};

[[nodiscard]] LatencySummary summarize(std::vector<double> values);

/// Completions per second in the middle of a run: of the ascending completion times, those
/// between the 10% and the 90% mark, over the time between them, so that the ramp-up and the
/// drain at the end do not count. 0 with fewer than 10 completions.
[[nodiscard]] double steady_throughput(std::vector<double> completion_times);

}  // namespace ata::service

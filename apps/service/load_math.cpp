#include "load_math.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "ata/core/error.hpp"

namespace ata::service {

std::vector<double> poisson_arrivals(double rate, double duration, std::size_t max_requests,
                                     models::Rng& rng) {
  if (!(rate > 0.0) || !std::isfinite(rate)) {
    throw InvalidArgument("arrival rate must be finite and > 0, got " + std::to_string(rate));
  }
  if (!(duration > 0.0) || !std::isfinite(duration)) {
    throw InvalidArgument("duration must be finite and > 0, got " + std::to_string(duration));
  }
  if (max_requests > kMostArrivals) {
    throw InvalidArgument("at most " + std::to_string(kMostArrivals) + " requests, got " +
                          std::to_string(max_requests));
  }
  const std::size_t bound = max_requests > 0 ? max_requests : kMostArrivals;
  if (max_requests == 0 && rate * duration > static_cast<double>(kMostArrivals)) {
    throw InvalidArgument("rate x duration = " + std::to_string(rate * duration) +
                          " requests, more than the " + std::to_string(kMostArrivals) +
                          " a run may schedule");
  }
  std::vector<double> arrivals;
  arrivals.reserve(std::min(bound, static_cast<std::size_t>(rate * duration * 1.1) + 16));
  double t = 0.0;
  while (arrivals.size() < bound) {
    t += -std::log1p(-models::uniform01(rng)) / rate;  // Exp(rate): uniform01 < 1, so finite
    if (t >= duration) break;
    arrivals.push_back(t);
  }
  return arrivals;
}

double percentile(std::span<const double> sorted, double q) {
  if (sorted.empty()) throw InvalidArgument("percentile of no values");
  if (!(q >= 0.0 && q <= 1.0)) {
    throw InvalidArgument("percentile rank must be in [0, 1], got " + std::to_string(q));
  }
  const auto n = static_cast<double>(sorted.size());
  // The tolerance keeps q * n = 99.000000000000014 (0.99 x 100 in binary) at rank 99.
  const auto rank = static_cast<std::size_t>(std::max(0.0, std::ceil(q * n - 1e-9)));
  return sorted[rank == 0 ? 0 : rank - 1];
}

LatencySummary summarize(std::vector<double> values) {
  LatencySummary s;
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  s.count = values.size();
  s.mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(s.count);
  s.p50 = percentile(values, 0.50);
  s.p90 = percentile(values, 0.90);
  s.p99 = percentile(values, 0.99);
  s.max = values.back();
  return s;
}

double steady_throughput(std::vector<double> completion_times) {
  constexpr std::size_t kFewest = 10;
  if (completion_times.size() < kFewest) return 0.0;
  std::sort(completion_times.begin(), completion_times.end());
  const std::size_t n = completion_times.size();
  const std::size_t first = n / 10;
  const std::size_t last = n - 1 - n / 10;
  const double span = completion_times[last] - completion_times[first];
  return span > 0.0 ? static_cast<double>(last - first) / span : 0.0;
}

}  // namespace ata::service

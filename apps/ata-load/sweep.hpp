#pragma once
// ata-load --sweep: one ata-serve per strategy, its saturation throughput, then p99 latency
// against offered load from light to past saturation.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "load_client.hpp"
#include "load_math.hpp"

namespace ata::load {

/// A server configuration of the sweep: "ata-auto", or "ata-auto:off" for load awareness off.
struct SweepStrategy {
  std::string label;     ///< as given, e.g. "ata-auto:off"
  std::string strategy;  ///< e.g. "ata-auto"
  bool load_aware = true;
  bool late = false;  ///< ata-serve --binding late
};

/// Parses "NAME", "NAME:on", "NAME:off" (load awareness) or "NAME:late" (late binding).
/// Throws ata::InvalidArgument otherwise.
[[nodiscard]] SweepStrategy parse_sweep_strategy(const std::string& text);

struct SweepConfig {
  std::string server;  ///< the ata-serve executable
  std::string scenario = "cifar";
  std::size_t workers = 16;
  double unit_us = 100.0;
  std::size_t draws = 4000;
  std::uint64_t seed = 1;
  std::vector<SweepStrategy> strategies;
  std::size_t samples_min = 16;
  std::size_t samples_max = 32;
  std::size_t connections = 64;
  std::chrono::milliseconds timeout{10000};
  std::size_t warmup_requests = 200;      ///< per strategy, first, 8 at a time
  std::size_t saturation_requests = 400;  ///< per strategy, all sent at once
  std::vector<double> loads;              ///< offered load as fractions of the reference throughput
  double point_seconds = 10.0;            ///< duration of each load point
};

/// One load point of one strategy.
struct SweepPoint {
  double fraction = 0.0;    ///< of the reference throughput
  double nominal = 0.0;     ///< requests per second asked of the Poisson process
  double offered = 0.0;     ///< requests per second that came: requests / duration
  double throughput = 0.0;  ///< answered (200) per second, from the start to the last reply
  std::size_t requests = 0;
  std::size_t errors = 0;
  service::LatencySummary latency;  ///< seconds, answered requests
  double worker_seconds = 0.0;      ///< mean per answered request
  double batch_latency = 0.0;       ///< median of the server's batch latency, seconds
  double http_overhead = 0.0;       ///< median of (latency - the server's batch latency), seconds
  bool saturated = false;           ///< throughput < 0.85 x offered, or more than 1% errors
};

struct SweepCurve {
  SweepStrategy strategy;
  double saturation = 0.0;  ///< requests per second with every connection busy
  std::vector<SweepPoint> points;
};

struct SweepResult {
  double reference = 0.0;  ///< pull's saturation throughput (the highest, without pull)
  std::string reference_label;
  std::vector<SweepCurve> curves;
};

/// Runs the sweep. Each server first serves the warm-up requests, so that a learning strategy
/// is measured once it has learned. Pull is measured first (its saturation sets the reference);
/// each strategy stops after its first saturated point. `progress` gets the share done and what
/// runs. Throws ata::Error when a server cannot start or does not exit cleanly.
[[nodiscard]] SweepResult run_sweep(
    const SweepConfig& config, const std::function<void(double, const std::string&)>& progress);

/// The result as JSON: the configuration, the reference, the curves and their points.
[[nodiscard]] nlohmann::json sweep_json(const SweepConfig& config, const SweepResult& result);

/// Summarises one open-loop run of `duration` seconds at a `nominal` rate. Saturation is
/// judged against the arrivals that actually came, so that a Poisson run with few arrivals is
/// not mistaken for a saturated one.
[[nodiscard]] SweepPoint summarize_point(const service::OpenLoopResult& run, double nominal,
                                         double duration);

}  // namespace ata::load

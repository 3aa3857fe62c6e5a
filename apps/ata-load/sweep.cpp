#include "sweep.hpp"

#include <algorithm>
#include <cstdio>
#include <thread>

#include "ata/core/error.hpp"
#include "ata/core/make_policy.hpp"
#include "server_process.hpp"

namespace ata::load {

namespace {

// A point is saturated when fewer than this share of the arrivals are answered per second...
constexpr double kSaturatedThroughputShare = 0.85;
// ...or when more than this share of its requests fail.
constexpr double kSaturatedErrorShare = 0.01;
// How long a server may take to drain and exit after SIGTERM.
constexpr auto kServerStopTimeout = std::chrono::seconds(30);
// The saturation run's requests all wait from the start: they get this long.
constexpr auto kSaturationTimeout = std::chrono::minutes(10);
// The random stream of the load points' arrivals (the run's seed picks the run).
constexpr std::uint64_t kArrivalStream = 100;
// The warm-up's requests run this many at a time.
constexpr std::size_t kWarmupConnections = 8;
// How long a server may take to finish the batches of requests that timed out.
constexpr auto kIdleTimeout = std::chrono::minutes(2);
constexpr auto kIdlePoll = std::chrono::milliseconds(50);

std::string text(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g", value);
  return buffer;
}

std::vector<std::string> server_arguments(const SweepConfig& c, const SweepStrategy& s) {
  return {"--listen",
          "127.0.0.1",
          "--port",
          "0",
          "--threads",
          "1",
          "--scenario",
          c.scenario,
          "--workers",
          std::to_string(c.workers),
          "--unit-us",
          text(c.unit_us),
          "--draws",
          std::to_string(c.draws),
          "--strategy",
          s.strategy,
          "--load-aware",
          s.load_aware ? "on" : "off",
          "--binding",
          s.late ? "late" : "arrival",
          "--seed",
          std::to_string(c.seed),
          "--max-samples",
          std::to_string(c.samples_max),
          "--max-connections",
          std::to_string(c.connections + 8),
          "--max-in-flight",
          std::to_string(c.connections),
          "--grace-ms",
          "2000"};
}

service::OpenLoopPlan plan_for(const SweepConfig& c, std::uint16_t port,
                               std::vector<double> arrivals) {
  service::OpenLoopPlan plan;
  plan.port = port;
  plan.arrivals = std::move(arrivals);
  plan.samples_min = c.samples_min;
  plan.samples_max = c.samples_max;
  plan.seed = c.seed;
  plan.connections = c.connections;
  plan.timeout = c.timeout;
  return plan;
}

// Waits until the server has no batch in flight, so that one measurement does not inherit the
// previous one's backlog.
void wait_until_idle(std::uint16_t port) {
  const auto give_up = std::chrono::steady_clock::now() + kIdleTimeout;
  for (;;) {
    const auto reply =
        service::http_exchange("127.0.0.1", port, "GET", "/stats", {}, std::chrono::seconds(10));
    const auto stats = nlohmann::json::parse(reply.body, nullptr, false);
    if (reply.status != 200 || !stats.is_object() || !stats.contains("batches")) {
      throw Error("ata-serve answered GET /stats with status " + std::to_string(reply.status) +
                  " and no batch counts");
    }
    if (stats["batches"].value("in_flight", 1) == 0) return;
    if (std::chrono::steady_clock::now() > give_up) {
      throw Error(
          "ata-serve still had batches in flight " +
          std::to_string(std::chrono::duration_cast<std::chrono::seconds>(kIdleTimeout).count()) +
          " s after the load stopped");
    }
    std::this_thread::sleep_for(kIdlePoll);
  }
}

}  // namespace

SweepStrategy parse_sweep_strategy(const std::string& spec) {
  SweepStrategy s{spec, spec, true};
  if (const auto colon = spec.find(':'); colon != std::string::npos) {
    s.strategy = spec.substr(0, colon);
    const std::string variant = spec.substr(colon + 1);
    if (variant != "on" && variant != "off" && variant != "late") {
      throw InvalidArgument("--strategies entry '" + spec +
                            "': expected NAME, NAME:on or NAME:off (load awareness), or "
                            "NAME:late (late binding)");
    }
    s.load_aware = variant != "off";
    s.late = variant == "late";
  }
  const auto known = policy_names();
  if (std::find(known.begin(), known.end(), s.strategy) == known.end()) {
    (void)make_policy(s.strategy, 1);  // throws, listing the names
  }
  return s;
}

SweepPoint summarize_point(const service::OpenLoopResult& run, double nominal, double duration) {
  SweepPoint p;
  p.nominal = nominal;
  p.requests = run.requests.size();
  p.offered = static_cast<double>(p.requests) / duration;
  std::vector<double> latencies;
  std::vector<double> overheads;
  std::vector<double> batches;
  double worker_seconds = 0.0;
  for (const auto& r : run.requests) {
    if (!r.error.empty()) {
      ++p.errors;
      continue;
    }
    latencies.push_back(r.latency);
    overheads.push_back(r.latency - r.batch_seconds);
    batches.push_back(r.batch_seconds);
    worker_seconds += r.worker_seconds;
  }
  const auto answered = static_cast<double>(latencies.size());
  p.latency = service::summarize(std::move(latencies));
  p.worker_seconds = answered > 0 ? worker_seconds / answered : 0.0;
  p.http_overhead = service::summarize(std::move(overheads)).p50;
  p.batch_latency = service::summarize(std::move(batches)).p50;
  p.throughput = run.elapsed > 0.0 ? answered / run.elapsed : 0.0;
  p.saturated =
      p.throughput < kSaturatedThroughputShare * p.offered ||
      static_cast<double>(p.errors) > kSaturatedErrorShare * static_cast<double>(p.requests);
  return p;
}

SweepResult run_sweep(const SweepConfig& c,
                      const std::function<void(double, const std::string&)>& progress) {
  if (c.strategies.empty()) throw InvalidArgument("--strategies names no strategy");
  if (c.loads.empty()) throw InvalidArgument("--loads names no load");
  std::vector<SweepStrategy> order = c.strategies;
  std::stable_partition(order.begin(), order.end(),
                        [](const SweepStrategy& s) { return s.strategy == "pull"; });
  std::vector<double> loads = c.loads;
  std::sort(loads.begin(), loads.end());

  SweepResult result;
  const std::size_t steps_each = loads.size() + 1;
  const auto share = [&](std::size_t step) {
    return static_cast<double>(step) / static_cast<double>(order.size() * steps_each);
  };
  for (std::size_t s = 0; s < order.size(); ++s) {
    const auto& strategy = order[s];
    service::ServerProcess server(c.server, server_arguments(c, strategy));
    SweepCurve curve{strategy, 0.0, {}};
    if (progress) progress(share(s * steps_each), strategy.label + " warm-up and saturation");

    // A learner measured while it still explores would look faster than it is once it has
    // learned (it spreads batches over every worker, slow ones included): it learns first.
    if (c.warmup_requests > 0) {
      auto warmup = plan_for(c, server.port(), std::vector<double>(c.warmup_requests, 0.0));
      warmup.connections = std::min(c.connections, kWarmupConnections);
      warmup.timeout = kSaturationTimeout;
      (void)service::run_open_loop(warmup);
      wait_until_idle(server.port());
    }

    // Every request at once: with all connections busy, the server's steady throughput. No
    // request may time out here: its batch would still run (a client gone cancels it, and
    // work already running finishes) and the measurement would count the capacity it used as
    // lost.
    auto saturation_plan =
        plan_for(c, server.port(), std::vector<double>(c.saturation_requests, 0.0));
    saturation_plan.timeout = kSaturationTimeout;
    const auto saturation = service::run_open_loop(saturation_plan);
    wait_until_idle(server.port());
    std::vector<double> completions;
    for (const auto& r : saturation.requests) {
      if (r.error.empty()) completions.push_back(r.finished);
    }
    curve.saturation = service::steady_throughput(std::move(completions));
    if (result.reference_label.empty()) {
      result.reference = curve.saturation;
      result.reference_label = strategy.label;
    }
    if (!(result.reference > 0.0)) {
      throw Error("the reference strategy " + result.reference_label +
                  " answered too few requests to measure its throughput");
    }

    for (std::size_t point = 0; point < loads.size(); ++point) {
      const double offered = loads[point] * result.reference;
      if (progress) {
        progress(share(s * steps_each + 1 + point),
                 strategy.label + " at " + text(loads[point]) + " x " + result.reference_label);
      }
      // One unit-rate Poisson process, its times divided by the rate: every strategy gets the
      // same arrivals at a load, and a higher load offers every arrival of a lower one.
      models::Rng rng(c.seed, kArrivalStream);
      auto arrivals = service::poisson_arrivals(1.0, offered * c.point_seconds, 0, rng);
      for (double& t : arrivals) t /= offered;
      const auto run = service::run_open_loop(plan_for(c, server.port(), std::move(arrivals)));
      wait_until_idle(server.port());  // timed-out requests may have left work behind
      SweepPoint p = summarize_point(run, offered, c.point_seconds);
      p.fraction = loads[point];
      curve.points.push_back(p);
      if (p.saturated) break;  // one point past saturation is enough to show the knee
    }
    const int code = server.stop(kServerStopTimeout);
    if (code != 0) {
      throw Error("ata-serve --strategy " + strategy.label + " exited with code " +
                  std::to_string(code) + " after SIGTERM");
    }
    result.curves.push_back(std::move(curve));
  }
  return result;
}

nlohmann::json sweep_json(const SweepConfig& c, const SweepResult& result) {
  nlohmann::json curves = nlohmann::json::array();
  for (const auto& curve : result.curves) {
    nlohmann::json points = nlohmann::json::array();
    for (const auto& p : curve.points) {
      points.push_back({{"fraction", p.fraction},
                        {"nominal", p.nominal},
                        {"offered", p.offered},
                        {"throughput", p.throughput},
                        {"requests", p.requests},
                        {"errors", p.errors},
                        {"p50", p.latency.p50},
                        {"p90", p.latency.p90},
                        {"p99", p.latency.p99},
                        {"max", p.latency.max},
                        {"mean", p.latency.mean},
                        {"worker_seconds", p.worker_seconds},
                        {"batch_latency", p.batch_latency},
                        {"http_overhead", p.http_overhead},
                        {"saturated", p.saturated}});
    }
    curves.push_back({{"label", curve.strategy.label},
                      {"strategy", curve.strategy.strategy},
                      {"load_aware", curve.strategy.load_aware},
                      {"late_binding", curve.strategy.late},
                      {"saturation", curve.saturation},
                      {"saturation_vs_reference", curve.saturation / result.reference},
                      {"points", points}});
  }
  return {{"config",
           {{"scenario", c.scenario},
            {"workers", c.workers},
            {"unit_us", c.unit_us},
            {"draws", c.draws},
            {"seed", c.seed},
            {"samples_min", c.samples_min},
            {"samples_max", c.samples_max},
            {"connections", c.connections},
            {"timeout_ms", c.timeout.count()},
            {"warmup_requests", c.warmup_requests},
            {"saturation_requests", c.saturation_requests},
            {"point_seconds", c.point_seconds},
            {"loads", c.loads}}},
          {"reference", result.reference},
          {"reference_label", result.reference_label},
          {"curves", curves}};
}

}  // namespace ata::load

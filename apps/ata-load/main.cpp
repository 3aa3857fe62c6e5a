// ata-load: open-loop load for ata-serve over loopback (Poisson arrivals, latencies counted from
// each request's scheduled arrival), and --sweep: one server per strategy, p99 latency against
// offered load from light to past saturation (docs/service.md).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>

#include "app_support.hpp"
#include "ata/core/error.hpp"
#include "load_client.hpp"
#include "load_math.hpp"
#include "sweep.hpp"

namespace {

constexpr const char* kProgram = "ata-load";
constexpr double kLongestRunSeconds = 3600.0;
constexpr std::size_t kMostConnections = 4096;
constexpr std::size_t kMostSamples = 100000;

struct Options {
  std::string host = "127.0.0.1";
  int port = 0;
  double rate = 10.0;
  double duration = 10.0;
  std::size_t requests = 0;
  std::size_t connections = 64;
  std::size_t samples = 16;
  std::size_t samples_max = 0;  // 0: = samples
  std::size_t timeout_ms = 10000;
  std::uint64_t seed = 1;
  std::string json_path;
  // --sweep
  bool sweep = false;
  std::string server;
  std::string scenario = "cifar";
  std::size_t workers = 16;
  double unit_us = 100.0;
  std::size_t draws = 4000;
  std::vector<std::string> strategies{"ata-auto", "ata-auto:off", "pull", "gta", "ofta"};
  std::vector<double> loads{0.1, 0.3, 0.5, 0.7, 0.8, 0.9, 1.0, 1.1, 1.25};
  double point_seconds = 10.0;
  std::size_t warmup_requests = 200;
  std::size_t saturation_requests = 400;
  std::string plot_dir;
};

double ms(double seconds) { return seconds * 1000.0; }

void check_at_most(const char* flag, double value, double most) {
  if (value > most) {
    throw ata::apps::UsageError(std::string(flag) + " must be at most " + ata::apps::general(most) +
                                ", got " + ata::apps::general(value));
  }
}

// ata-serve next to this program: both are built into, and installed in, one folder.
std::string sibling_server() {
  std::error_code error;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) throw ata::Error("cannot locate ata-serve next to ata-load; pass --server PATH");
  return (self.parent_path() / "ata-serve").string();
}

int single_run(const Options& o) {
  if (o.port == 0) throw ata::apps::UsageError("--port is required (the port ata-serve printed)");
  const std::string address = ata::service::loopback_address(o.host);
  ata::models::Rng rng(o.seed, 0);
  ata::service::OpenLoopPlan plan;
  plan.host = address;
  plan.port = static_cast<std::uint16_t>(o.port);
  plan.arrivals = ata::service::poisson_arrivals(o.rate, o.duration, o.requests, rng);
  plan.samples_min = o.samples;
  plan.samples_max = o.samples_max;
  plan.seed = o.seed;
  plan.connections = o.connections;
  plan.timeout = std::chrono::milliseconds(o.timeout_ms);
  std::printf(
      "%s: %s:%d, Poisson arrivals at %g requests/s for %g s: %zu requests, B = %zu..%zu, "
      "%zu connections at most\n",
      kProgram, address.c_str(), o.port, o.rate, o.duration, plan.arrivals.size(), plan.samples_min,
      plan.samples_max, plan.connections);
  std::fflush(stdout);
  ata::service::OpenLoopResult run;
  {
    ata::apps::Progress progress(kProgram);
    run = ata::service::run_open_loop(plan, [&](std::size_t finished, std::size_t total) {
      progress.update(static_cast<double>(finished) / static_cast<double>(total),
                      std::to_string(finished) + "/" + std::to_string(total) + " replies");
    });
  }
  const auto point = ata::load::summarize_point(run, o.rate, o.duration);
  std::map<std::string, std::size_t> errors;
  for (const auto& r : run.requests) {
    if (!r.error.empty()) ++errors[r.error];
  }
  std::string error_text;
  for (const auto& [kind, count] : errors) {
    error_text += (error_text.empty() ? " (" : ", ") + kind + ": " + std::to_string(count);
  }
  if (!error_text.empty()) error_text += ")";
  const auto& l = point.latency;
  std::printf("  answered %zu, errors %zu%s\n", l.count, point.errors, error_text.c_str());
  std::printf("  throughput %.2f requests/s over %.2f s\n", point.throughput, run.elapsed);
  std::printf("  latency (ms): p50 %.2f  p90 %.2f  p99 %.2f  max %.2f  mean %.2f\n", ms(l.p50),
              ms(l.p90), ms(l.p99), ms(l.max), ms(l.mean));
  std::printf(
      "  per request: server worker time %.4f s; medians: batch %.3f ms, HTTP path "
      "(latency - batch) %.3f ms\n",
      point.worker_seconds, ms(point.batch_latency), ms(point.http_overhead));
  if (!o.json_path.empty()) {
    const nlohmann::json summary{
        {"host", address},
        {"port", o.port},
        {"rate", o.rate},
        {"duration", o.duration},
        {"requests", point.requests},
        {"answered", l.count},
        {"errors", errors},
        {"throughput", point.throughput},
        {"elapsed", run.elapsed},
        {"latency",
         {{"p50", l.p50}, {"p90", l.p90}, {"p99", l.p99}, {"max", l.max}, {"mean", l.mean}}},
        {"worker_seconds_per_request", point.worker_seconds},
        {"batch_latency", point.batch_latency},
        {"http_overhead", point.http_overhead}};
    ata::apps::write_file(o.json_path, summary.dump(2) + "\n");
    std::printf("wrote %s\n", o.json_path.c_str());
  }
  return 0;
}

std::string at_load(const ata::load::SweepCurve& curve, double fraction) {
  for (const auto& p : curve.points) {
    if (p.fraction == fraction) return ata::apps::fixed(ms(p.latency.p99), 1);
  }
  return "-";
}

int sweep(const Options& o) {
  ata::load::SweepConfig c;
  c.server = o.server.empty() ? sibling_server() : o.server;
  c.scenario = o.scenario;
  c.workers = o.workers;
  c.unit_us = o.unit_us;
  c.draws = o.draws;
  c.seed = o.seed;
  for (const auto& s : o.strategies) c.strategies.push_back(ata::load::parse_sweep_strategy(s));
  c.samples_min = o.samples;
  c.samples_max = o.samples_max;
  c.connections = o.connections;
  c.timeout = std::chrono::milliseconds(o.timeout_ms);
  c.warmup_requests = o.warmup_requests;
  c.saturation_requests = o.saturation_requests;
  c.loads = o.loads;
  c.point_seconds = o.point_seconds;
  std::printf(
      "%s --sweep: %s, scenario %s, n = %zu, 1 unit = %g us, B = %zu..%zu, %zu "
      "connections, %g s per load point\n",
      kProgram, c.server.c_str(), c.scenario.c_str(), c.workers, c.unit_us, c.samples_min,
      c.samples_max, c.connections, c.point_seconds);
  std::fflush(stdout);
  ata::load::SweepResult result;
  {
    ata::apps::Progress progress(std::string(kProgram) + " --sweep");
    result = ata::load::run_sweep(
        c, [&](double share, const std::string& what) { progress.update(share, what); });
  }

  ata::apps::Table summary({"strategy", "saturation (req/s)", "vs " + result.reference_label,
                            "p99 at 50% (ms)", "p99 at 80% (ms)", "worker s/request",
                            "HTTP path (ms)", "HTTP path / batch"});
  ata::apps::Table points({"strategy", "load", "offered (req/s)", "throughput (req/s)", "p50 (ms)",
                           "p90 (ms)", "p99 (ms)", "errors"});
  for (const auto& curve : result.curves) {
    const auto& first = curve.points.front();
    summary.add_row(
        {curve.strategy.label, ata::apps::fixed(curve.saturation, 1),
         ata::apps::fixed(curve.saturation / result.reference, 2), at_load(curve, 0.5),
         at_load(curve, 0.8), ata::apps::fixed(first.worker_seconds, 3),
         ata::apps::fixed(ms(first.http_overhead), 2),
         first.batch_latency > 0.0
             ? ata::apps::fixed(100.0 * first.http_overhead / first.batch_latency, 2) + "%"
             : "-"});
    for (const auto& p : curve.points) {
      points.add_row(
          {curve.strategy.label, ata::apps::fixed(p.fraction, 2), ata::apps::fixed(p.offered, 1),
           ata::apps::fixed(p.throughput, 1), ata::apps::fixed(ms(p.latency.p50), 1),
           ata::apps::fixed(ms(p.latency.p90), 1), ata::apps::fixed(ms(p.latency.p99), 1),
           std::to_string(p.errors) + (p.saturated ? " (saturated)" : "")});
    }
  }
  std::printf(
      "\nSaturation throughput, and p99 latency at a share of %s's (worker time and HTTP "
      "path at the lightest load):\n%s",
      result.reference_label.c_str(), summary.render().c_str());
  std::printf("\nEvery load point (load: offered / %s's saturation throughput of %.1f req/s):\n%s",
              result.reference_label.c_str(), result.reference, points.render().c_str());
  if (!o.json_path.empty()) {
    ata::apps::write_file(o.json_path, ata::load::sweep_json(c, result).dump(2) + "\n");
    std::printf("wrote %s\n", o.json_path.c_str());
  }
  if (!o.plot_dir.empty()) {
    ata::apps::Figure figure{
        "p99_vs_load.png",
        "p99 latency vs offered load (" + c.scenario + ", n = " + std::to_string(c.workers) +
            ", B = " + std::to_string(c.samples_min) + ".." + std::to_string(c.samples_max) + ")",
        "offered load (requests/s)",
        "p99 latency (ms)",
        false,
        true,
        {}};
    for (const auto& curve : result.curves) {
      ata::apps::Series series{curve.strategy.label, {}, {}};
      for (const auto& p : curve.points) {
        series.x.push_back(p.offered);
        series.y.push_back(ms(p.latency.p99));
      }
      figure.series.push_back(std::move(series));
    }
    for (const auto& file : ata::apps::plot_figures(o.plot_dir, {figure})) {
      std::printf("wrote %s\n", file.c_str());
    }
  }
  return 0;
}

int run(Options o) {
  if (o.samples_max == 0) o.samples_max = o.samples;
  check_at_most("--duration", o.duration, kLongestRunSeconds);
  check_at_most("--point-seconds", o.point_seconds, kLongestRunSeconds);
  check_at_most("--connections", static_cast<double>(o.connections),
                static_cast<double>(kMostConnections));
  check_at_most("--samples-max", static_cast<double>(o.samples_max),
                static_cast<double>(kMostSamples));
  check_at_most("--timeout-ms", static_cast<double>(o.timeout_ms), kLongestRunSeconds * 1000.0);
  check_at_most("--warmup-requests", static_cast<double>(o.warmup_requests),
                static_cast<double>(ata::service::kMostArrivals));
  check_at_most("--saturation-requests", static_cast<double>(o.saturation_requests),
                static_cast<double>(ata::service::kMostArrivals));
  if (o.samples_max < o.samples) {
    throw ata::apps::UsageError("--samples-max must be >= --samples (" + std::to_string(o.samples) +
                                "), got " + std::to_string(o.samples_max));
  }
  for (const double load : o.loads) {
    if (!(load > 0.0) || load > 100.0) {
      throw ata::apps::UsageError("--loads entries must be in (0, 100], got " +
                                  ata::apps::general(load));
    }
  }
  return o.sweep ? sweep(o) : single_run(o);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{
      "ata-load: open-loop load for ata-serve over loopback; --sweep compares strategies "
      "from light load to past saturation"};
  app.option_defaults()->always_capture_default();
  auto* host = app.add_option("--host", o.host, "server address: loopback only");
  auto* port = app.add_option("--port", o.port, "server port")->check(CLI::Range(1, 65535));
  auto* rate = app.add_option("--rate", o.rate, "Poisson arrivals per second")
                   ->check(ata::apps::kPositiveNumber);
  auto* duration = app.add_option("--duration", o.duration, "seconds of arrivals")
                       ->check(ata::apps::kPositiveNumber);
  auto* requests = app.add_option("--requests", o.requests, "requests at most (0: no bound)")
                       ->transform(ata::apps::whole_number(0));
  app.add_option("--connections", o.connections,
                 "connections at most; a request waits for a free one (its latency counts from "
                 "its scheduled arrival)")
      ->transform(ata::apps::whole_number(1));
  app.add_option("--samples", o.samples, "tasks per request B (the least, with --samples-max)")
      ->transform(ata::apps::whole_number(1));
  app.add_option("--samples-max", o.samples_max, "B uniform in [--samples, this] per request")
      ->transform(ata::apps::whole_number(1));
  app.add_option("--timeout-ms", o.timeout_ms, "per request, from its scheduled arrival")
      ->transform(ata::apps::whole_number(1));
  app.add_option("--seed", o.seed, "seed of the arrivals and the requests")
      ->transform(ata::apps::whole_number(0));
  app.add_option("--json", o.json_path, "write the summary (or the sweep) as JSON");
  auto* sweep_flag = app.add_flag("--sweep", o.sweep,
                                  "start one ata-serve per strategy and sweep the offered load");
  sweep_flag->excludes(host)->excludes(port)->excludes(rate)->excludes(duration)->excludes(
      requests);
  app.add_option("--server", o.server, "--sweep: the ata-serve program (default: next to this)");
  app.add_option("--scenario", o.scenario, "--sweep: the servers' workers (preset or JSON file)");
  app.add_option("--workers", o.workers, "--sweep: workers for a preset")
      ->transform(ata::apps::whole_number(1));
  app.add_option("--unit-us", o.unit_us, "--sweep: microseconds per model unit of delay")
      ->check(ata::apps::kPositiveNumber);
  app.add_option("--draws", o.draws, "--sweep: Monte Carlo draws per task")
      ->transform(ata::apps::whole_number(1));
  app.add_option("--strategies", o.strategies,
                 "--sweep: comma list of NAME, NAME:off (load awareness off) or NAME:late (late "
                 "binding)")
      ->delimiter(',');
  app.add_option("--loads", o.loads,
                 "--sweep: offered loads as fractions of pull's saturation throughput")
      ->delimiter(',');
  app.add_option("--point-seconds", o.point_seconds, "--sweep: seconds of arrivals per load")
      ->check(ata::apps::kPositiveNumber);
  app.add_option("--warmup-requests", o.warmup_requests,
                 "--sweep: requests each server answers first (8 at a time), so that a learning "
                 "strategy is measured once it has learned")
      ->transform(ata::apps::whole_number(0));
  app.add_option("--saturation-requests", o.saturation_requests,
                 "--sweep: requests sent at once to measure a server's saturation throughput")
      ->transform(ata::apps::whole_number(1));
  app.add_option("--plot", o.plot_dir, "--sweep: write p99_vs_load.png into this folder");
  return ata::apps::run_reporting_errors(kProgram, [&] {
    if (const auto help = ata::apps::parse_arguments(app, argc, argv)) {
      std::fputs(help->c_str(), stdout);
      return 0;
    }
    return run(o);
  });
}

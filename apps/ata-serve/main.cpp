// ata-serve: an HTTP/1.1 service that runs each POST /estimate as one batch of Monte Carlo tasks
// on a pool of heterogeneous workers, allocated by one strategy (docs/service.md).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "app_support.hpp"
#include "ata/core/backup_rule.hpp"
#include "ata/core/error.hpp"
#include "ata/core/make_policy.hpp"
#include "ata/core/objective.hpp"
#include "ata/runtime/batch_options.hpp"
#include "ata/runtime/batch_scheduler.hpp"
#include "ata/runtime/observer.hpp"
#include "ata/runtime/pool_options.hpp"
#include "ata/runtime/trace_recorder.hpp"
#include "ata/runtime/worker_pool.hpp"
#include "estimate_request.hpp"
#include "http_server.hpp"
#include "trace_output.hpp"

namespace {

constexpr const char* kProgram = "ata-serve";
constexpr std::size_t kDefaultWorkers = 16;
constexpr std::size_t kMostSamples = ata::service::EstimateLimits::kMostSamples;
constexpr std::size_t kMostBodyBytes = ata::service::EstimateLimits::kMostBody;
constexpr std::size_t kMostDraws = 10000000;
constexpr double kMostUnitUs = 1e6;
constexpr std::size_t kMostCpuList = 1024;  // values of --cpus, one per worker

struct Options {
  std::string listen = "127.0.0.1";
  int port = 0;
  std::size_t threads = 1;
  std::size_t max_connections = 256;
  std::string scenario = "cifar";
  std::size_t workers = 16;
  double unit_us = 100.0;
  bool burn = false;
  std::string strategy = "ata-auto";
  std::uint64_t seed = 1;
  std::size_t draws = 4000;
  std::size_t max_samples = 1024;
  std::size_t max_body = 4096;
  std::size_t grace_ms = 5000;
  std::size_t batch_deadline_ms = 0;
  std::size_t max_in_flight = 64;
  std::string load_aware = "on";
  std::string backups = "off";
  std::string binding = "arrival";
  std::string cpus;                  // comma list, worker i pinned to CPU LIST[i]
  std::optional<double> work_price;  // empty: 1/n (ata::Objective)
  std::string trace_path;            // empty: no trace
  std::size_t trace_rounds = 20;
};

// --trace-rounds at most: the trace keeps 2 x this many batches.
constexpr std::size_t kMostTraceRounds = 10'000;

void check_at_most(const char* flag, std::size_t value, std::size_t most) {
  if (value > most) {
    throw ata::apps::UsageError(std::string(flag) + " must be at most " + std::to_string(most) +
                                ", got " + std::to_string(value));
  }
}

int serve(const Options& o) {
  // Outputs first: a path that cannot be written fails now, not at shutdown.
  if (!o.trace_path.empty()) ata::apps::check_output_file("--trace", o.trace_path);
  check_at_most("--max-samples", o.max_samples, kMostSamples);
  check_at_most("--max-body", o.max_body, kMostBodyBytes);
  check_at_most("--draws", o.draws, kMostDraws);
  if (o.unit_us > kMostUnitUs) {
    throw ata::apps::UsageError("--unit-us must be at most 1e6 (one second), got " +
                                std::to_string(o.unit_us));
  }
  const auto unit = std::chrono::nanoseconds(static_cast<long long>(o.unit_us * 1000.0));
  const auto scenario = ata::apps::scenario_from_flag(o.scenario, o.workers, kDefaultWorkers, 1);
  const auto means = scenario.scaled(std::chrono::duration<double>(unit).count()).means();
  ata::PolicyOptions policy_options;
  policy_options.means = means;                                          // OFTA's oracle knowledge
  policy_options.alpha = *std::max_element(means.begin(), means.end());  // ATA: the paper's alpha
  policy_options.seed = o.seed;
  const auto policy = ata::make_policy(o.strategy, scenario.workers(), policy_options);
  auto pool_options = ata::runtime::PoolOptions::from_scenario(
      scenario, unit,
      o.burn ? ata::runtime::Slowdown::Kind::burn : ata::runtime::Slowdown::Kind::sleep);
  pool_options.set_seed(o.seed);
  const auto cpus = ata::apps::numbers_of(o.cpus);
  if (!cpus.empty() && cpus.size() != scenario.workers()) {
    throw ata::apps::UsageError("--cpus: " + std::to_string(cpus.size()) + " CPUs for " +
                                std::to_string(scenario.workers()) +
                                " workers; give one CPU per worker");
  }
  for (std::size_t i = 0; i < cpus.size(); ++i) {
    pool_options.set_cpu(i, static_cast<unsigned>(cpus[i]));
  }
  ata::runtime::WorkerPool pool(pool_options);
  // Late binding has its own options type: it runs no backups and no load awareness.
  const auto scheduler =
      o.binding == "late"
          ? std::make_unique<ata::runtime::BatchScheduler>(
                pool, *policy,
                ata::runtime::LateBindingOptions{}.set_max_in_flight(o.max_in_flight))
          : std::make_unique<ata::runtime::BatchScheduler>(
                pool, *policy,
                ata::runtime::SchedulerOptions{}
                    .set_max_in_flight(o.max_in_flight)
                    .set_load_aware(o.load_aware == "on")
                    .set_backups(ata::BackupOptions{}.set_mode(ata::parse_backup_mode(o.backups))));

  ata::service::ServerConfig config;
  config.listen = o.listen;
  config.port = static_cast<std::uint16_t>(o.port);
  config.threads = o.threads;
  config.max_connections = o.max_connections;
  config.limits = {o.max_samples, o.max_body};
  config.grace = std::chrono::milliseconds(o.grace_ms);
  config.batch_deadline = std::chrono::milliseconds(o.batch_deadline_ms);
  config.draws = o.draws;
  config.seed = o.seed;
  config.strategy = std::string(policy->name());
  config.work_price = ata::Objective{o.work_price}.price(scenario.workers());
  const nlohmann::json description{{"strategy", config.strategy},
                                   {"work_price", config.work_price},
                                   {"work_price_default", !o.work_price.has_value()},
                                   {"load_aware", o.binding != "late" && o.load_aware == "on"},
                                   {"backups", o.backups},
                                   {"binding", o.binding},
                                   {"cpus", cpus},
                                   {"max_in_flight", o.max_in_flight},
                                   {"scenario", scenario.name()},
                                   {"workers", scenario.workers()},
                                   {"unit_us", o.unit_us},
                                   {"draws_per_task", o.draws},
                                   {"max_samples", o.max_samples},
                                   {"seed", o.seed}};
  ata::service::ServiceMetrics metrics(scenario.workers(), description);
  ata::runtime::TraceRecorder trace(o.trace_path.empty() ? 0 : o.trace_rounds,
                                    o.trace_path.empty() ? 0 : o.trace_rounds);
  std::vector<ata::runtime::Observer*> watching{&metrics.scheduler_observer()};
  if (!o.trace_path.empty()) watching.push_back(&trace);
  ata::runtime::ObserverList observers(std::move(watching));
  scheduler->set_observer(&observers);
  ata::service::HttpServer server(config, *scheduler, metrics);

  // The first line is machine-readable: ata-load --sweep and the tests read the port from it.
  std::printf("%s: listening on %s\n", kProgram, server.endpoint().c_str());
  std::printf(
      "  strategy %s (binding %s, load-aware %s, backups %s, at most %zu batches in flight), "
      "scenario %s, "
      "%zu workers, 1 model unit = %g us of %s, %zu draws per task, seed %llu\n",
      config.strategy.c_str(), o.binding.c_str(),
      o.binding == "late" ? "by the queue" : o.load_aware.c_str(), o.backups.c_str(),
      o.max_in_flight, scenario.name().c_str(), scenario.workers(), o.unit_us,
      o.burn ? "spinning" : "sleep", o.draws, static_cast<unsigned long long>(o.seed));
  std::printf(
      "  POST /estimate {\"samples\": B} (B <= %zu), GET /stats, GET /metrics, GET "
      "/healthz; SIGINT or SIGTERM stops it (grace %zu ms)\n",
      o.max_samples, o.grace_ms);
  std::printf(
      "  each reply's batch reports wall_seconds, worker_seconds and objective_seconds = wall + "
      "p x worker, p = %s%s\n",
      ata::apps::general(config.work_price, 4).c_str(), o.work_price ? "" : " (1/n, the default)");
  std::fflush(stdout);
  server.run();
  std::uint64_t responses = 0;
  const nlohmann::json stats = metrics.stats_json();
  for (const auto& [status, count] : stats["responses"].items()) {
    responses += count.get<std::uint64_t>();
  }
  std::printf("%s: stopped after %llu responses\n", kProgram,
              static_cast<unsigned long long>(responses));
  if (!o.trace_path.empty()) {
    const ata::runtime::TracedProcess process{config.strategy, scenario.workers(), trace.batches()};
    ata::apps::write_trace(o.trace_path, {&process, 1});
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{
      "ata-serve: POST /estimate runs one batch of Monte Carlo tasks on heterogeneous "
      "workers; GET /stats and /metrics show what the strategy learned"};
  app.option_defaults()->always_capture_default();
  app.add_option("--listen", o.listen, "IP address to listen on");
  app.add_option("--port", o.port, "TCP port; 0 picks a free one (printed on the first line)")
      ->check(CLI::Range(0, 65535));
  app.add_option("--threads", o.threads, "threads serving the connections")
      ->transform(ata::apps::whole_number(1));
  app.add_option("--max-connections", o.max_connections,
                 "open connections at most; more are closed at once")
      ->transform(ata::apps::whole_number(1));
  app.add_option("--scenario", o.scenario, "simulator preset or JSON scenario file: the workers");
  app.add_option("--workers", o.workers, "workers (threads) for a preset")
      ->transform(ata::apps::whole_number(1));
  app.add_option("--unit-us", o.unit_us, "microseconds per model unit of delay")
      ->check(ata::apps::kPositiveNumber);
  app.add_flag("--burn", o.burn, "spin on the CPU instead of sleeping the delays");
  app.add_option("--strategy", o.strategy,
                 "gta, ofta, uta, ata, ata-e, ata-auto, pull, race:M or race:M@F");
  app.add_option("--seed", o.seed, "seed of the workers' delays, ata-auto, and unseeded requests")
      ->transform(ata::apps::whole_number(0));
  app.add_option("--draws", o.draws, "Monte Carlo draws per task")
      ->transform(ata::apps::whole_number(1));
  app.add_option("--max-samples", o.max_samples, "largest batch a request may ask for")
      ->transform(ata::apps::whole_number(1));
  app.add_option("--max-body", o.max_body, "largest request body, bytes (larger: 413)")
      ->transform(ata::apps::whole_number(1));
  app.add_option("--grace-ms", o.grace_ms,
                 "after SIGINT/SIGTERM, how long batches in flight may finish before they are "
                 "cancelled")
      ->transform(ata::apps::whole_number(0));
  app.add_option("--batch-deadline-ms", o.batch_deadline_ms,
                 "a batch still running after this long is cancelled (503); 0: no deadline")
      ->transform(ata::apps::whole_number(0));
  app.add_option("--max-in-flight", o.max_in_flight,
                 "batches in flight at most; more wait for a slot")
      ->transform(ata::apps::whole_number(1));
  const auto* load_aware =
      app.add_option("--load-aware", o.load_aware,
                     "on: allocate each batch against the work already queued on each worker")
          ->check(CLI::IsMember({"on", "off"}));
  const auto* backups =
      app.add_option(
             "--backups", o.backups,
             "backup tasks of allocated strategies and pull's racers: on (an idle worker "
             "also takes over unstarted tasks), copies (copies of overdue tasks only) or off")
          ->check(ata::apps::kBackupMode);
  app.add_option("--binding", o.binding,
                 "allocated strategies: arrival (allocate each batch when it arrives) or late "
                 "(a free worker takes the first waiting task it would end before the busy "
                 "faster workers reach it; not with --backups or --load-aware)")
      ->check(CLI::IsMember({"arrival", "late"}));
  app.add_option("--cpus", o.cpus,
                 "comma list: worker i runs on CPU LIST[i] only; workers sharing a CPU share its "
                 "time (with --burn, their delays too): real unequal shares of the machine")
      ->transform(ata::apps::cpu_list(kMostCpuList));
  app.add_option("--work-price", o.work_price,
                 "price p of a worker-second in wall-seconds: each batch reports objective_seconds "
                 "= wall + p x worker seconds (0: wall time only; default 1/n, so the whole "
                 "cluster busy for a second costs as much as a second of waiting)")
      ->check(ata::apps::kNonNegativeNumber);
  app.add_option("--trace", o.trace_path,
                 "at shutdown, write a Chrome-trace / Perfetto JSON timeline of the first and "
                 "last --trace-rounds batches to this file (docs/timelines.md)")
      ->check(ata::apps::kNonEmpty);
  app.add_option("--trace-rounds", o.trace_rounds,
                 "batches traced at each end of the server's run (the first N and the last N)")
      ->transform(ata::apps::whole_number(1, kMostTraceRounds));
  return ata::apps::run_reporting_errors(kProgram, [&] {
    if (const auto help = ata::apps::parse_arguments(app, argc, argv)) {
      std::fputs(help->c_str(), stdout);
      return 0;
    }
    // The late queue runs no backups and balances load by itself: the library's
    // LateBindingOptions has neither setting, so neither flag may be given with it.
    if (o.binding == "late" && (backups->count() > 0 || load_aware->count() > 0)) {
      throw ata::apps::UsageError(
          "--binding late: not with --backups or --load-aware (the late queue runs no backups "
          "and balances the load by itself)");
    }
    return serve(o);
  });
}

#include "training.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <system_error>

#include "app_support.hpp"
#include "ata/core/error.hpp"
#include "ata/runtime/batch_scheduler.hpp"
#include "ata/runtime/pool_options.hpp"
#include "ata/runtime/worker_pool.hpp"

namespace ata::ml {

namespace {

double seconds(std::chrono::nanoseconds t) { return std::chrono::duration<double>(t).count(); }

}  // namespace

std::vector<double> true_means_seconds(const TrainingConfig& config) {
  return config.scenario.scaled(seconds(config.unit)).means();
}

TrainingRun train(const Problem& problem, const TrainingConfig& config, std::string_view strategy,
                  const std::function<void(std::size_t)>& progress) {
  if (config.batch < 1) throw InvalidArgument("batch size B must be >= 1, got 0");
  if (config.max_rounds < 1) throw InvalidArgument("rounds must be >= 1, got 0");
  if (!(config.step > 0.0) || !std::isfinite(config.step)) throw InvalidArgument("step size must be finite and > 0");
  if (!(config.target_gap > 0.0 && config.target_gap < 1.0)) {
    throw InvalidArgument("target gap must be in (0, 1), got " + std::to_string(config.target_gap));
  }
  if (config.method == Method::prox && !problem.has_prox()) {
    throw InvalidArgument("problem '" + problem.describe() + "' has no stochastic prox");
  }
  PolicyOptions options = config.policy;
  options.means = true_means_seconds(config);
  options.seed = config.seed;
  const auto policy = make_policy(strategy, config.scenario.workers(), options);
  auto pool_options = runtime::PoolOptions::from_scenario(
      config.scenario, config.unit, config.burn ? runtime::Slowdown::Kind::burn : runtime::Slowdown::Kind::sleep);
  pool_options.set_seed(config.seed);
  std::optional<runtime::WorkerPool> pool;
  try {
    pool.emplace(pool_options);
  } catch (const std::system_error& e) {  // the system's limit on threads, or on memory for stacks
    throw Error("cannot start " + std::to_string(config.scenario.workers()) +
                " worker threads: " + e.code().message() + " (use fewer workers)");
  }
  runtime::BatchScheduler scheduler(*pool, *policy,
                                    runtime::SchedulerOptions{}.set_backups(config.backups));

  TrainingRun run;
  run.name = std::string(strategy);
  std::vector<double> x = problem.initial_point();
  const double initial_gap = problem.loss(x) - problem.optimal_loss();
  if (!std::isfinite(initial_gap)) {
    throw InvalidArgument("the loss gap at the start, f(x0) - f*, is not finite on " +
                          problem.describe() + ": the data's values are too large");
  }
  const double target = config.target_gap * initial_gap;
  const std::size_t d = problem.dim();
  double overhead = 0.0;
  std::vector<double> mean(d);
  for (std::size_t k = 1; k <= config.max_rounds; ++k) {
    const std::uint64_t round_seed = config.seed + k;
    auto [results, report] = scheduler.run(config.batch, [&](const runtime::TaskContext& ctx) {
      sim::Rng rng(round_seed, ctx.task());
      std::vector<double> out(d);
      if (config.method == Method::sgd) {
        problem.stochastic_gradient(x, rng, out);
      } else {
        problem.stochastic_prox(x, config.step, rng, out);
      }
      return out;
    });
    std::fill(mean.begin(), mean.end(), 0.0);
    for (const auto& r : results) {
      for (std::size_t j = 0; j < d; ++j) mean[j] += r[j];
    }
    const double inv = 1.0 / static_cast<double>(results.size());
    for (std::size_t j = 0; j < d; ++j) {
      x[j] = config.method == Method::sgd ? x[j] - config.step * mean[j] * inv : mean[j] * inv;
    }
    run.wall_seconds += seconds(report.wall);
    run.worker_seconds += seconds(report.worker_time());
    overhead += seconds(report.overhead());
    run.rounds = k;
    run.final_gap = problem.loss(x) - problem.optimal_loss();
    if (!std::isfinite(run.final_gap)) {
      throw Error(run.name + " diverged at round " + std::to_string(k) + ": f(x) - f* is " +
                  (std::isnan(run.final_gap) ? "nan" : "inf") + " with step size " +
                  apps::general(config.step, 6) + " (lower --step)");
    }
    run.trace.push_back({k, run.wall_seconds, run.worker_seconds, run.final_gap});
    if (progress) progress(k);
    if (run.final_gap <= target) {
      run.reached = true;
      break;
    }
  }
  run.overhead_share = run.wall_seconds > 0.0 ? overhead / run.wall_seconds : 0.0;
  return run;
}

}  // namespace ata::ml

#include "training.hpp"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <new>
#include <span>
#include <utility>
#include <vector>

#include "app_support.hpp"
#include "ata/core/ata_auto_policy.hpp"
#include "ata/core/error.hpp"
#include "ata/runtime/batch_scheduler.hpp"
#include "ata/runtime/observer.hpp"
#include "ata/runtime/trace_recorder.hpp"
#include "training_lanes.hpp"
#include "training_stream.hpp"

namespace ata::ml {

namespace {

double seconds(std::chrono::nanoseconds t) { return std::chrono::duration<double>(t).count(); }

void check_settings(const Problem& problem, const TrainingConfig& config) {
  if (config.batch < 1) throw InvalidArgument("batch size B must be >= 1, got 0");
  if (config.max_rounds < 1) throw InvalidArgument("rounds must be >= 1, got 0");
  if (!(config.step > 0.0) || !std::isfinite(config.step))
    throw InvalidArgument("step size must be finite and > 0");
  if (!(config.target_gap > 0.0 && config.target_gap < 1.0)) {
    throw InvalidArgument("target gap must be in (0, 1), got " + std::to_string(config.target_gap));
  }
  if (config.method == Method::prox && !problem.has_prox()) {
    throw InvalidArgument("problem '" + problem.describe() + "' has no stochastic prox");
  }
}

// One task of the training: a stochastic gradient or prox at x, its sample drawn from rng.
std::vector<double> training_task(const Problem& problem, const TrainingConfig& config,
                                  std::span<const double> x, models::Rng& rng) {
  std::vector<double> out(problem.dim());
  if (config.method == Method::sgd) {
    problem.stochastic_gradient(x, rng, out);
  } else {
    problem.stochastic_prox(x, config.step, rng, out);
  }
  return out;
}

// What the policy believes each worker's mean task time is, after its run.
std::vector<double> learned_means(const Policy& policy) {
  std::vector<double> out(policy.workers());
  const auto* automatic = dynamic_cast<const AtaAutoPolicy*>(&policy);
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] = automatic != nullptr ? automatic->estimated_mean(i) : policy.stats(i).mean();
  }
  return out;
}

// Keeps what `policy` believes of each worker (learned_means()) after round 1 and every
// `every` rounds. on_learned() runs under the policy's lock, so it may read the policy.
class LearningRecorder final : public runtime::Observer {
 public:
  LearningRecorder(const Policy& policy, std::size_t max_rounds, std::vector<LearnedPoint>& out)
      : policy_(policy),
        every_(std::max<std::size_t>(
            1, (max_rounds + kMaxLearningPoints - 1) / kMaxLearningPoints)),
        out_(out) {}

  void on_learned(std::size_t round, std::span<const WorkerStats> /*learned*/) noexcept override {
    if (round != 1 && round % every_ != 0) return;
    try {
      out_.push_back({round, learned_means(policy_)});
    } catch (const std::bad_alloc&) {
      // A point fewer in the plot: the training goes on.
    }
  }

 private:
  const Policy& policy_;
  const std::size_t every_;
  std::vector<LearnedPoint>& out_;
};

}  // namespace

double TrainingRun::stale_share() const noexcept {
  return ata::stale_share(gradients_applied, gradients_discarded, tasks_stopped);
}

std::vector<double> true_means_seconds(const TrainingConfig& config) {
  return config.scenario.scaled(seconds(config.unit)).means();
}

TrainingRun train(const Problem& problem, const TrainingConfig& config, std::string_view strategy,
                  const std::function<void(std::size_t)>& progress) {
  check_settings(problem, config);
  if (const auto selection = stream_selection(strategy)) {
    if (config.stream.delay_threshold == 0) {
      throw InvalidArgument(std::string(strategy) +
                            " needs Ringmaster's delay threshold R >= 1 (--delay-threshold)");
    }
    return train_stream(problem, config, strategy, *selection, progress);
  }
  PolicyOptions options = config.policy;
  options.means = config.means.empty() ? true_means_seconds(config) : config.means;
  options.seed = config.seed;
  const auto policy = make_policy(strategy, config.scenario.workers(), options);
  TrainingLanes lanes(config);
  runtime::BatchScheduler scheduler(lanes.lanes(), *policy,
                                    runtime::SchedulerOptions{}.set_backups(config.backups));
  TrainingRun run;
  runtime::TraceRecorder recorder(config.traced_rounds, config.traced_rounds);
  LearningRecorder learning(*policy, config.max_rounds, run.learning);
  std::vector<runtime::Observer*> watching;
  if (config.traced_rounds > 0) watching.push_back(&recorder);
  if (config.record_learning) watching.push_back(&learning);
  runtime::ObserverList observers(std::move(watching));
  if (config.traced_rounds > 0 || config.record_learning) scheduler.set_observer(&observers);

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
      models::Rng rng(round_seed, ctx.task());
      return training_task(problem, config, x, rng);
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
  lanes.check_pinned();
  run.overhead_share = run.wall_seconds > 0.0 ? overhead / run.wall_seconds : 0.0;
  run.objective = config.objective.value(run.wall_seconds, run.worker_seconds, config.scenario.workers());
  {
    std::lock_guard lock(policy->mutex());
    run.learned_means = learned_means(*policy);
    run.played_plans = sim::played_plans(*policy);
  }
  run.traced = recorder.batches();
  return run;
}

std::vector<double> calibrate_means(const Problem& problem, const TrainingConfig& config,
                                    std::size_t tasks_per_worker) {
  if (tasks_per_worker == 0) {
    throw InvalidArgument("calibration needs at least 1 task per worker, got 0");
  }
  check_settings(problem, config);
  const std::size_t n = config.scenario.workers();
  // UTA spreads a batch of n * r tasks as r per worker; batches stay within kMaxBatch.
  const auto uniform = make_policy("uta", n);
  TrainingLanes lanes(config);
  // No backup copies: each worker's own tasks measure it, the slow ones included.
  runtime::BatchScheduler scheduler(lanes.lanes(), *uniform,
                                    runtime::SchedulerOptions{}.set_backups(BackupOptions{}));
  const std::vector<double> x = problem.initial_point();
  const std::size_t per_batch = std::max<std::size_t>(1, runtime::BatchScheduler::kMaxBatch / n);
  for (std::size_t done = 0; done < tasks_per_worker;) {
    const std::size_t r = std::min(per_batch, tasks_per_worker - done);
    const std::size_t first = done * n;
    scheduler.run(r * n, [&](const runtime::TaskContext& ctx) {
      models::Rng rng(config.seed, first + ctx.task());
      (void)training_task(problem, config, x, rng);
    });
    done += r;
  }
  lanes.check_pinned();
  std::vector<double> means(n);
  std::lock_guard lock(uniform->mutex());
  for (std::size_t i = 0; i < n; ++i) means[i] = uniform->stats(i).mean();
  return means;
}

}  // namespace ata::ml

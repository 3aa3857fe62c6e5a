#include "training_stream.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "app_support.hpp"
#include "ata/core/error.hpp"
#include "ata/runtime/task_stream.hpp"
#include "training_lanes.hpp"

namespace ata::ml {

namespace {

using Clock = std::chrono::steady_clock;
using Result = std::optional<std::vector<double>>;

double seconds(std::chrono::nanoseconds t) { return std::chrono::duration<double>(t).count(); }

// The model's point of each version, for the tasks to read while the consumer writes the next:
// x^v keeps its slot until x^{v+R} takes it, when a task started from v has reached delay R
// and can no longer be applied.
class PointHistory {
 public:
  PointHistory(std::size_t threshold, std::span<const double> x0) : slots_(threshold) {
    publish(0, x0);
  }

  // The point of `version`, or null once its slot was taken (the task is stale).
  [[nodiscard]] std::shared_ptr<const std::vector<double>> at(std::uint64_t version) const {
    std::lock_guard lock(mutex_);
    const Slot& slot = slots_[version % slots_.size()];
    return slot.version == version ? slot.point : nullptr;
  }

  void publish(std::uint64_t version, std::span<const double> x) {
    auto point = std::make_shared<const std::vector<double>>(x.begin(), x.end());
    {
      std::lock_guard lock(mutex_);
      Slot& slot = slots_[version % slots_.size()];
      slot.version = version;
      std::swap(slot.point, point);
    }
    // The replaced point, if no task holds it any more, is freed here, outside the lock.
  }

 private:
  struct Slot {
    std::uint64_t version = std::numeric_limits<std::uint64_t>::max();
    std::shared_ptr<const std::vector<double>> point;
  };
  mutable std::mutex mutex_;
  std::vector<Slot> slots_;
};

// The scenario with its changes moved from rounds to stream versions: a change of round r
// strikes the tasks started from version (r - 1) x batch on, as in ata-sim's stream; the lanes'
// slowdowns count a stream's rounds as its version + 1.
models::Scenario stream_scenario(const models::Scenario& scenario, std::size_t batch) {
  std::vector<models::WorkerChange> changes(scenario.changes().begin(), scenario.changes().end());
  for (auto& change : changes) change.round = (change.round - 1) * batch + 1;
  return {scenario.name(),
          std::vector<models::TimeModel>(scenario.models().begin(), scenario.models().end()),
          std::move(changes)};
}

}  // namespace

void require_stream_memory(const TrainingConfig& config, std::size_t dim) {
  const std::size_t threshold = config.stream.delay_threshold;
  // Each of the R slots holds a point, its version and its shared pointer.
  apps::require_memory("--delay-threshold " + std::to_string(threshold) + " points of " +
                           std::to_string(dim) + " numbers (the model's last R versions)",
                       {threshold, dim + 4, sizeof(double)}, "; lower --delay-threshold");
}

TrainingRun train_stream(const Problem& problem, const TrainingConfig& config,
                         std::string_view strategy, StreamSelection selection,
                         const std::function<void(std::size_t)>& progress) {
  const std::size_t threshold = config.stream.delay_threshold;
  const std::size_t d = problem.dim();
  require_stream_memory(config, d);
  const std::size_t n = config.scenario.workers();
  const double step = config.stream.step > 0.0 ? config.stream.step : config.step;
  const std::size_t cap = config.stream.max_gradients > 0 ? config.stream.max_gradients
                                                          : config.max_rounds * config.batch;
  const bool sgd = config.method == Method::sgd;

  TrainingConfig lanes_config = config;
  lanes_config.scenario = stream_scenario(config.scenario, config.batch);
  TrainingLanes lanes(lanes_config);
  runtime::TaskStream stream(lanes.lanes());
  // One stream per run: the trace keeps its first and last config.traced_rounds x B tasks.
  const std::size_t traced_tasks = config.traced_rounds * config.batch;
  runtime::TraceRecorder recorder(1, 0, runtime::StreamTraceBound{traced_tasks, traced_tasks});
  if (config.traced_rounds > 0) stream.set_observer(&recorder);

  // The oracle's true means, in seconds, as the lanes' changes strike them.
  const double unit = seconds(config.unit);
  std::vector<models::TimeModel> models(lanes_config.scenario.models().begin(),
                                        lanes_config.scenario.models().end());
  const auto changes = lanes_config.scenario.changes();
  std::size_t next_change = 0;
  const auto true_means = [&] {
    std::vector<double> means(n);
    for (std::size_t i = 0; i < n; ++i) means[i] = models[i].mean() * unit;
    return means;
  };
  // Moves past the changes that strike tasks started from `version` on; true if any did.
  const auto apply_changes = [&](std::uint64_t version) {
    bool changed = false;
    while (next_change < changes.size() && changes[next_change].round - 1 <= version) {
      models[changes[next_change].worker] = changes[next_change].model;
      ++next_change;
      changed = true;
    }
    return changed;
  };
  apply_changes(0);
  RingmasterWorkers workers(selection, n, threshold,
                            selection == StreamSelection::oracle ? true_means()
                                                                 : std::vector<double>{});

  TrainingRun run;
  run.name = std::string(strategy);
  run.stream = true;
  std::vector<double> x = problem.initial_point();
  const double optimum = problem.optimal_loss();
  const double initial_gap = problem.loss(x) - optimum;
  if (!std::isfinite(initial_gap)) {
    throw InvalidArgument("the loss gap at the start, f(x0) - f*, is not finite on " +
                          problem.describe() + ": the data's values are too large");
  }
  const double target = config.target_gap * initial_gap;
  PointHistory history(threshold, x);

  // Worker time: the tasks delivered, plus the elapsed part of those running (each task
  // writes its start; the consumer marks a worker it restarts as running from then).
  const Clock::time_point t0 = Clock::now();
  const auto since_start = [&] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0);
  };
  std::vector<std::atomic<std::int64_t>> started_at(n);
  std::vector<unsigned char> running(n, 0);
  std::vector<unsigned char> kept(n, 0);
  std::vector<double> complete_time(n, 0.0);
  std::vector<std::size_t> complete_count(n, 0);
  double done_work = 0.0;
  std::optional<double> end_time;
  const auto work_at = [&](double now) {
    double busy = done_work;
    for (std::size_t i = 0; i < n; ++i) {
      if (running[i] == 0) continue;
      const double start = seconds(std::chrono::nanoseconds(started_at[i].load(std::memory_order_relaxed)));
      busy += std::max(0.0, now - start);
    }
    return busy;
  };
  const auto mark_running = [&](std::size_t worker) {
    running[worker] = 1;
    started_at[worker].store(since_start().count(), std::memory_order_relaxed);
  };

  const auto initial = workers.select();
  for (const std::size_t w : initial) kept[w] = 1;
  auto options = runtime::StreamOptions{}.set_workers({initial.begin(), initial.end()});
  if (config.stream.stops) options.set_stale_bound(threshold);

  const auto task = [&](const runtime::StreamContext& ctx) -> Result {
    started_at[ctx.worker()].store(since_start().count(), std::memory_order_relaxed);
    const auto point = history.at(ctx.version());
    if (!point) return std::nullopt;  // its delay has reached R: it will not be applied
    models::Rng rng(config.seed, ctx.task());
    std::vector<double> out(d);
    if (sgd) {
      problem.stochastic_gradient(*point, rng, out);
    } else {
      // The prox's displacement y - prox_{step f_j}(y): applied at y = x^k it is SPPM's step.
      problem.stochastic_prox(*point, step, rng, out);
      for (std::size_t j = 0; j < d; ++j) out[j] = (*point)[j] - out[j];
    }
    return out;
  };

  const auto consumer = [&](runtime::StreamDelivery<Result>& delivery) -> runtime::StreamVerdict {
    if (delivery.failed()) std::rethrow_exception(delivery.error());
    const std::size_t w = delivery.worker();
    const double elapsed = seconds(delivery.duration());
    running[w] = 0;
    if (delivery.ending()) {
      // Still running when the consumer ended the stream: its part up to then counts.
      const double start = seconds(std::chrono::nanoseconds(started_at[w].load(std::memory_order_relaxed)));
      done_work += end_time ? std::clamp(*end_time - start, 0.0, elapsed) : elapsed;
      return runtime::StreamVerdict::reject;
    }
    done_work += elapsed;
    workers.observe(w, elapsed, delivery.stopped());
    auto verdict = runtime::StreamVerdict::reject;
    if (delivery.stopped()) {
      ++run.tasks_stopped;
    } else if (!ringmaster_applies(delivery.delay(), threshold)) {
      ++run.gradients_discarded;
      run.min_discarded_delay = run.gradients_discarded == 1
                                    ? delivery.delay()
                                    : std::min(run.min_discarded_delay, delivery.delay());
      complete_time[w] += elapsed;
      ++complete_count[w];
    } else {
      complete_time[w] += elapsed;
      ++complete_count[w];
      run.max_applied_delay = std::max(run.max_applied_delay, delivery.delay());
      const Result& result = delivery.value();
      if (!result) throw Error(run.name + ": a fresh result has no point to come from");
      const double scale = sgd ? step : 1.0;
      for (std::size_t j = 0; j < d; ++j) x[j] -= scale * (*result)[j];
      const std::size_t k = ++run.gradients_applied;
      history.publish(k, x);  // before the version it belongs to
      delivery.advance();
      verdict = runtime::StreamVerdict::accept;
      if (apply_changes(k) && selection == StreamSelection::oracle) workers.set_true_means(true_means());
      if (k % config.batch == 0 || k == cap) {
        const double now = seconds(since_start());
        const double gap = problem.loss(x) - optimum;
        if (!std::isfinite(gap)) {
          throw Error(run.name + " diverged at result " + std::to_string(k) + ": f(x) - f* is " +
                      (std::isnan(gap) ? "nan" : "inf") + " with step size " +
                      apps::general(step, 6) + " (lower --stream-step)");
        }
        run.trace.push_back({k, now, work_at(now), gap});
        run.final_gap = gap;
        if (progress) progress(k / config.batch);
        if (gap <= target || k == cap) {
          run.reached = gap <= target;
          end_time = now;
          delivery.end_stream();
          return verdict;
        }
      }
    }
    // The selection after this event: the stream keeps busy exactly the workers chosen.
    const auto chosen = workers.select();
    std::vector<unsigned char> wanted(n, 0);
    for (const std::size_t i : chosen) wanted[i] = 1;
    for (std::size_t i = 0; i < n; ++i) {
      if (wanted[i] == kept[i]) continue;
      delivery.keep_busy(i, wanted[i] != 0);
      kept[i] = wanted[i];
      if (wanted[i] != 0 && running[i] == 0) mark_running(i);
    }
    if (kept[w] != 0 && running[w] == 0) mark_running(w);  // it restarts after this call
    return verdict;
  };

  const runtime::StreamReport report = stream.run(task, consumer, options);
  lanes.check_pinned();
  if (config.traced_rounds > 0) run.traced_streams = recorder.streams();
  run.rounds = run.gradients_applied;
  run.wall_seconds = end_time.value_or(report.wall);
  run.worker_seconds = done_work;
  run.objective = config.objective.value(run.wall_seconds, run.worker_seconds, n);
  run.workers_busy_at_end = static_cast<std::size_t>(std::count(kept.begin(), kept.end(), 1));
  run.learned_means.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (const RingmasterSelection* learned = workers.learned()) {
      run.learned_means[i] = learned->estimated_mean(i);
    } else {
      run.learned_means[i] = complete_count[i] > 0 ? complete_time[i] / static_cast<double>(complete_count[i]) : 0.0;
    }
  }
  if (const RingmasterSelection* learned = workers.learned()) {
    run.probes = learned->probes();
    run.changes_detected = learned->changes_detected() + learned->censored_alarms();
  }
  return run;
}

}  // namespace ata::ml

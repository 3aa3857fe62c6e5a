#include "ata/sim/experiment.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "ata/core/ata_auto_policy.hpp"
#include "ata/core/error.hpp"
#include "ata/sim/eofta_policy.hpp"
#include "ata/sim/quadratic_sgd.hpp"
#include "ata/sim/ringmaster_stream.hpp"
#include "ata/sim/simulation.hpp"
#include "core/checks.hpp"
#include "core/plan_evaluator.hpp"

namespace ata::sim {

double StrategyRun::stale_share() const noexcept {
  return ata::stale_share(gradients_applied, gradients_discarded, tasks_stopped);
}

namespace {

void require_finite_suboptimality(double suboptimality, const std::string& where, double step) {
  if (!std::isfinite(suboptimality)) {
    throw Error("SGD on the quadratic diverged by " + where +
                " (f(x) - f* = " + detail::to_text(suboptimality) + "): step size " +
                detail::to_text(step) + " is too large");
  }
}

// The stream's gradients on the quadratic: worker w's is computed when its task starts, at the
// point of that moment, and applied when the stream says so.
class QuadraticConsumer final : public GradientConsumer {
 public:
  QuadraticConsumer(QuadraticSgd& sgd, std::size_t workers)
      : sgd_(sgd), gradients_(workers * sgd.dim()) {}
  void start(std::size_t worker) override { sgd_.stochastic_gradient(slot(worker)); }
  void apply(std::size_t worker) override { sgd_.apply(slot(worker)); }

 private:
  std::span<double> slot(std::size_t worker) {
    return std::span(gradients_).subspan(worker * sgd_.dim(), sgd_.dim());
  }
  QuadraticSgd& sgd_;
  std::vector<double> gradients_;
};

// Without SGD the stream still runs: its times and counts alone.
class NoGradients final : public GradientConsumer {
 public:
  void start(std::size_t /*worker*/) override {}
  void apply(std::size_t /*worker*/) override {}
};

StrategyRun run_stream(const ExperimentConfig& config, std::string_view strategy,
                       StreamSelection selection, const std::function<void(double)>& progress) {
  if (config.sgd_target && !config.sgd) {
    throw InvalidArgument("a suboptimality target needs SGD on (ExperimentConfig::sgd)");
  }
  const double step = config.stream_step > 0.0 ? config.stream_step : config.sgd_step;
  std::optional<QuadraticSgd> sgd;
  if (config.sgd) sgd.emplace(config.sgd_dim, step, config.sgd_noise, config.seed);
  std::optional<QuadraticConsumer> quadratic;
  NoGradients nothing;
  GradientConsumer* consumer = &nothing;
  if (sgd) consumer = &quadratic.emplace(*sgd, config.scenario.workers());
  StreamOptions options;
  options.threshold = config.stream_threshold;
  options.stops = config.stream_stops;
  options.selection = selection;
  options.seed = config.seed;
  options.gradients_per_round = config.batch;
  RingmasterStream stream(config.scenario, options, *consumer);

  const std::size_t cap =
      config.stream_max_gradients > 0 ? config.stream_max_gradients : config.rounds * config.batch;
  StrategyRun run;
  run.name = std::string(strategy);
  run.stream = true;
  const std::size_t points = std::max<std::size_t>(1, std::min(config.trace_points, cap));
  std::size_t next_point = 1;  // as for rounds: gradients ceil(j cap / points), j = 1..points
  const std::size_t progress_every = std::max<std::size_t>(1, cap / 100);
  const auto record = [&](std::size_t k, double suboptimality) {
    run.trace.push_back(TracePoint{k, stream.time(), stream.worker_time(), 0.0, suboptimality, {}});
    if (config.record_learning) {
      run.trace.back().learned_means.resize(config.scenario.workers());
      for (std::size_t i = 0; i < config.scenario.workers(); ++i) {
        run.trace.back().learned_means[i] =
            stream.learned() != nullptr ? stream.learned()->estimated_mean(i) : 0.0;
      }
    }
  };
  while (stream.applied() < cap) {
    if (stream.advance() != StreamOutcome::applied) continue;
    const std::size_t k = stream.applied();
    const bool trace_now = k * points >= next_point * cap;
    if (sgd && (config.sgd_target || trace_now)) {
      const double suboptimality = sgd->suboptimality();
      require_finite_suboptimality(suboptimality, "gradient " + std::to_string(k), step);
      if (config.sgd_target && suboptimality <= *config.sgd_target) {
        run.target_wall_time = stream.time();
        run.target_worker_time = stream.worker_time();
        run.target_gradients = k;
        record(k, suboptimality);
        break;
      }
    }
    if (trace_now) {
      record(k, sgd ? sgd->suboptimality() : 0.0);
      ++next_point;
    }
    if (progress && k % progress_every == 0) {
      progress(static_cast<double>(k) / static_cast<double>(cap));
    }
  }
  run.wall_time = stream.time();
  run.worker_time = stream.worker_time();
  run.work_price = config.objective.price(config.scenario.workers());
  run.objective = run.wall_time + run.work_price * run.worker_time;
  if (sgd) run.final_suboptimality = sgd->suboptimality();
  run.gradients_applied = stream.applied();
  run.gradients_discarded = stream.discarded();
  run.tasks_stopped = stream.stopped();
  if (const RingmasterSelection* learned = stream.learned()) {
    std::size_t selected = 0;
    for (std::size_t i = 0; i < config.scenario.workers(); ++i)
      selected += learned->selected(i) ? 1 : 0;
    run.selected_workers = selected;
    run.probes = learned->probes();
    run.changes_detected = learned->changes_detected() + learned->censored_alarms();
  } else {
    std::size_t busy = 0;
    for (std::size_t i = 0; i < config.scenario.workers(); ++i) busy += stream.busy(i) ? 1 : 0;
    run.selected_workers = busy;
  }
  return run;
}

}  // namespace

EoftaCost estimate_eofta_cost(const ExperimentConfig& config, double max_sweep_terms) {
  std::vector<models::TimeModel> laws(config.scenario.models().begin(),
                                      config.scenario.models().end());
  EoftaCost worst = estimate_eofta_cost(laws, config.batch, {}, max_sweep_terms);
  const auto changes = config.scenario.changes();
  for (std::size_t c = 0; c < changes.size() && worst.fits();) {
    const std::size_t round = changes[c].round;
    if (round > config.rounds) break;
    for (; c < changes.size() && changes[c].round == round; ++c) {
      laws.at(changes[c].worker) = changes[c].model;
    }
    const EoftaCost cost = estimate_eofta_cost(laws, config.batch, {}, max_sweep_terms);
    if (!cost.fits() || cost.values > worst.values) worst = cost;
  }
  return worst;
}

std::vector<std::size_t> frontier_race_grid(std::size_t workers) {
  std::vector<std::size_t> grid;
  if (workers <= 16) {
    for (std::size_t m = 1; m <= workers; ++m) grid.push_back(m);
    return grid;
  }
  for (std::size_t m = 1; m < workers; m *= 2) grid.push_back(m);
  grid.push_back(workers);
  return grid;
}

std::size_t frontier_max_probes(std::size_t workers) {
  return frontier_race_grid(workers).size() + 16 +
         ata::detail::PlanEvaluator::kRestartBudgets.size() + 3;
}

namespace {
// A refinement of a plan (a restart budget, backup copies) must beat the best plan by this.
constexpr double kRefinementMargin = 0.01;
constexpr std::string_view kHedgedSuffix = "+copies";

// "ofta+copies": OFTA's quotas with the backup copies ata-auto's hedged quotas carry, whatever
// the run's own backups.
StrategyRun run_frontier_candidate(const ExperimentConfig& config, std::string_view plan,
                                   const std::function<void(double)>& progress = {}) {
  if (!plan.ends_with(kHedgedSuffix)) return run_strategy(config, plan, progress);
  ExperimentConfig hedged = config;
  hedged.backups = ata::detail::PlanEvaluator::kHedging;
  StrategyRun run =
      run_strategy(hedged, plan.substr(0, plan.size() - kHedgedSuffix.size()), progress);
  run.name = std::string(plan);
  return run;
}
}  // namespace

FrontierChoice choose_frontier(const ExperimentConfig& config) {
  if (config.rounds < 1) throw InvalidArgument("number of rounds K must be >= 1, got 0");
  if (config.frontier_probe_rounds < 1) {
    throw InvalidArgument("frontier probe rounds must be >= 1, got 0");
  }
  FrontierChoice choice;
  choice.probe_rounds = std::min(config.rounds, config.frontier_probe_rounds);
  choice.probe_seed = frontier_probe_seed(config.seed);
  ExperimentConfig probe = config;
  probe.rounds = choice.probe_rounds;
  probe.seed = choice.probe_seed;
  probe.sgd = false;
  probe.trace_points = 1;
  const auto probe_plan = [&](const std::string& plan) {
    for (const auto& c : choice.candidates) {
      if (c.plan == plan) return;
    }
    const StrategyRun r = run_frontier_candidate(probe, plan);
    choice.candidates.push_back({plan, r.wall_time, r.worker_time, r.objective});
  };
  const auto best_race = [&] {
    std::size_t best = 0;
    double value = 0.0;
    for (const auto& c : choice.candidates) {
      if (!c.plan.starts_with("race:") || c.plan.find('@') != std::string::npos) continue;
      const auto m = static_cast<std::size_t>(std::stoull(c.plan.substr(5)));
      if (best == 0 || c.objective < value) {
        best = m;
        value = c.objective;
      }
    }
    return best;
  };
  const std::size_t n = config.scenario.workers();
  for (const std::size_t m : frontier_race_grid(n)) probe_plan("race:" + std::to_string(m));
  if (n > 16) {  // refine between M*/2 and 2 M*, at most 16 more sizes
    const std::size_t m = best_race();
    const std::size_t low = std::max<std::size_t>(1, m / 2);
    const std::size_t high = std::min(n, 2 * m);
    const std::size_t step = std::max<std::size_t>(1, m / 8);
    for (std::size_t k = low, added = 0; k <= high && added < 16; k += step, ++added) {
      probe_plan("race:" + std::to_string(k));
    }
  }
  // The best race with the restart budgets ata-auto tries (in multiples of each racer's mean),
  // which pay on heavy tails.
  const std::string race_to_restart = "race:" + std::to_string(best_race());
  for (const double factor : ata::detail::PlanEvaluator::kRestartBudgets) {
    probe_plan(race_to_restart + "@" + ata::detail::to_text(factor));
  }
  probe_plan("ofta");
  // Hedged quotas, as ata-auto may play them: on tails with rare long times they beat both.
  probe_plan("ofta" + std::string(kHedgedSuffix));
  const EoftaCost cost = estimate_eofta_cost(probe, config.frontier_eofta_sweep_terms);
  if (cost.fits()) {
    try {
      probe_plan("eofta");
    } catch (const InvalidArgument& e) {
      choice.eofta_note = e.what();
    }
  } else {
    choice.eofta_note = cost.reason;
  }
  // A restart budget or backup copies must beat the plans without by kRefinementMargin: on
  // memoryless or light tails they change little, and the probes' noise alone would pick them.
  const auto judged = [&](const FrontierCandidate& c) {
    const bool refined = c.plan.find('@') != std::string::npos || c.plan.ends_with(kHedgedSuffix);
    return refined ? c.objective * (1.0 + kRefinementMargin) : c.objective;
  };
  const auto best = std::min_element(choice.candidates.begin(), choice.candidates.end(),
                                     [&](const FrontierCandidate& a, const FrontierCandidate& b) {
                                       return judged(a) < judged(b);
                                     });
  choice.plan = best->plan;
  choice.probe_objective = best->objective;
  return choice;
}

namespace {

std::string plan_name(std::size_t racers) {
  return racers == 0 ? std::string("quotas") : "race:" + std::to_string(racers);
}

constexpr std::string_view kHedgedQuotas = "hedged quotas";

}  // namespace

std::vector<PlayedPlan> played_plans(const Policy& policy) {
  std::vector<PlayedPlan> played;
  const auto* automatic = dynamic_cast<const AtaAutoPolicy*>(&policy);
  if (automatic == nullptr) return played;
  const auto rounds = automatic->rounds_by_racers();
  const std::size_t hedged = automatic->hedged_rounds();
  if (rounds[0] > hedged) played.push_back({plan_name(0), rounds[0] - hedged});
  if (hedged > 0) played.push_back({std::string(kHedgedQuotas), hedged});
  for (std::size_t m = 1; m < rounds.size(); ++m) {
    if (rounds[m] > 0) played.push_back({plan_name(m), rounds[m]});
  }
  std::stable_sort(played.begin(), played.end(),
                   [](const PlayedPlan& a, const PlayedPlan& b) { return a.rounds > b.rounds; });
  if (automatic->restart_rounds() > 0) {
    played.push_back({"with restart budgets", automatic->restart_rounds()});
  }
  return played;
}

StrategyRun run_strategy(const ExperimentConfig& config, std::string_view strategy,
                         const std::function<void(double)>& progress) {
  if (config.rounds < 1) throw InvalidArgument("number of rounds K must be >= 1, got 0");
  if (const auto selection = stream_selection(strategy)) {
    return run_stream(config, strategy, *selection, progress);
  }
  if (strategy == "frontier") {
    FrontierChoice choice = choose_frontier(config);
    StrategyRun run = run_frontier_candidate(config, choice.plan, progress);
    run.name = "frontier";
    run.eofta.reset();
    run.frontier = std::move(choice);
    return run;
  }
  const double work_price = config.objective.price(config.scenario.workers());
  PolicyOptions options = config.policy;
  options.means = config.scenario.means();
  options.seed = config.seed;
  options.objective = config.objective;
  const auto models = config.scenario.models();
  EoftaPolicy* eofta = nullptr;
  std::unique_ptr<Policy> policy;
  if (strategy == "eofta") {
    auto owned =
        std::make_unique<EoftaPolicy>(std::vector<models::TimeModel>(models.begin(), models.end()));
    eofta = owned.get();
    policy = std::move(owned);
  } else {
    policy = make_policy(strategy, config.scenario.workers(), options);
  }
  Simulation simulation(config.scenario, *policy, config.batch, config.seed, config.backups);
  std::optional<QuadraticSgd> sgd;
  if (config.sgd) sgd.emplace(config.sgd_dim, config.sgd_step, config.sgd_noise, config.seed);

  StrategyRun run;
  run.name = std::string(strategy);
  const std::size_t points = std::max<std::size_t>(1, std::min(config.trace_points, config.rounds));
  run.trace.reserve(points);
  std::size_t next_point = 1;  // the trace records rounds ceil(j K / points), j = 1..points
  // Traced rounds: the first N as they come, the last N in a ring (slot k mod N).
  const std::size_t keep = config.traced_rounds;
  if (keep > 0) simulation.set_copy_records(true);
  std::vector<TracedRound> last_rounds(config.rounds - std::min(keep, config.rounds) > keep ? keep
                                                                                            : 0);
  const std::size_t progress_every = std::max<std::size_t>(1, config.rounds / 100);
  for (std::size_t k = 1; k <= config.rounds; ++k) {
    const RoundRecord r = simulation.run_round();
    if (keep > 0) {
      const bool first = k <= keep || last_rounds.empty();
      if (first || k + keep > config.rounds) {
        TracedRound& t = first ? run.traced_rounds.emplace_back() : last_rounds[k % keep];
        t.round = k;
        t.start = run.wall_time;
        t.wall_time = r.wall_time;
        t.copies.assign(simulation.last_copies().begin(), simulation.last_copies().end());
      }
    }
    run.wall_time += r.wall_time;
    run.worker_time += r.worker_time;
    run.regret += r.proxy_loss - r.optimal_proxy_loss;
    run.takeovers += r.takeovers;
    run.backup_copies += r.backup_copies;
    run.stopped_copies += r.stopped_copies;
    if (sgd) sgd->step(config.batch);
    if (sgd && config.sgd_target && !run.target_wall_time &&
        sgd->suboptimality() <= *config.sgd_target) {
      run.target_wall_time = run.wall_time;
      run.target_worker_time = run.worker_time;
      run.target_gradients = k * config.batch;
    }
    if (k * points >= next_point * config.rounds) {
      const double suboptimality = sgd ? sgd->suboptimality() : 0.0;
      require_finite_suboptimality(suboptimality, "round " + std::to_string(k), config.sgd_step);
      TracePoint& point = run.trace.emplace_back(
          TracePoint{k, run.wall_time, run.worker_time, run.regret, suboptimality, {}});
      if (config.record_learning) {
        // ATA-Auto believes its own estimate (which forgets what a change made stale), the
        // others the observed mean.
        const auto* automatic = dynamic_cast<const AtaAutoPolicy*>(policy.get());
        point.learned_means.resize(policy->workers());
        for (std::size_t i = 0; i < point.learned_means.size(); ++i) {
          point.learned_means[i] =
              automatic != nullptr ? automatic->estimated_mean(i) : policy->stats(i).mean();
        }
      }
      ++next_point;
    }
    if (progress && k % progress_every == 0)
      progress(static_cast<double>(k) / static_cast<double>(config.rounds));
  }
  for (std::size_t j = 1; j <= last_rounds.size(); ++j) {  // oldest first
    run.traced_rounds.push_back(std::move(last_rounds[(config.rounds + j) % keep]));
  }
  run.work_price = work_price;
  run.objective = run.wall_time + work_price * run.worker_time;
  if (sgd) run.final_suboptimality = sgd->suboptimality();
  if (eofta != nullptr) run.eofta = eofta->solution();
  run.played_plans = played_plans(*policy);
  if (const auto* automatic = dynamic_cast<const AtaAutoPolicy*>(policy.get())) {
    for (const auto& e : automatic->last_evaluation()) {
      std::string plan = e.hedged ? std::string(kHedgedQuotas) : plan_name(e.racers);
      if (std::isfinite(e.restart_after)) {
        plan += " restarting past " + detail::to_text(e.restart_after) + "x the mean";
      }
      run.last_evaluation.push_back({plan, e.wall, e.work, e.objective});
    }
  }
  return run;
}

}  // namespace ata::sim

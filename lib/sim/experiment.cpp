#include "ata/sim/experiment.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "ata/core/error.hpp"
#include "ata/sim/eofta_policy.hpp"
#include "ata/sim/quadratic_sgd.hpp"
#include "ata/sim/simulation.hpp"
#include "core/checks.hpp"

namespace ata::sim {

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

StrategyRun run_strategy(const ExperimentConfig& config, std::string_view strategy,
                         const std::function<void(double)>& progress) {
  if (config.rounds < 1) throw InvalidArgument("number of rounds K must be >= 1, got 0");
  const double work_price = config.objective.price(config.scenario.workers());
  PolicyOptions options = config.policy;
  options.means = config.scenario.means();
  options.seed = config.seed;
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
  std::vector<TracedRound> last_rounds(config.rounds - std::min(keep, config.rounds) > keep ? keep : 0);
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
    if (k * points >= next_point * config.rounds) {
      const double suboptimality = sgd ? sgd->suboptimality() : 0.0;
      if (!std::isfinite(suboptimality)) {
        throw Error("SGD on the quadratic diverged by round " + std::to_string(k) +
                    " (f(x) - f* = " + detail::to_text(suboptimality) + "): step size " +
                    detail::to_text(config.sgd_step) + " is too large");
      }
      run.trace.push_back({k, run.wall_time, run.worker_time, run.regret, suboptimality});
      ++next_point;
    }
    if (progress && k % progress_every == 0) progress(static_cast<double>(k) / static_cast<double>(config.rounds));
  }
  for (std::size_t j = 1; j <= last_rounds.size(); ++j) {  // oldest first
    run.traced_rounds.push_back(std::move(last_rounds[(config.rounds + j) % keep]));
  }
  run.work_price = work_price;
  run.objective = run.wall_time + work_price * run.worker_time;
  if (sgd) run.final_suboptimality = sgd->suboptimality();
  if (eofta != nullptr) run.eofta = eofta->solution();
  return run;
}

}  // namespace ata::sim

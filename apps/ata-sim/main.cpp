// ata-sim: the paper's experiments in virtual time. Runs several strategies on one simulated
// cluster with the same seed, prints a comparison table, and writes JSON, CSV and PNG plots.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_for.h>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "app_support.hpp"
#include "ata/ata.hpp"
#include "sim_options.hpp"

namespace {

using ata::apps::Figure;
using ata::apps::Series;
using ata::sim::StrategyRun;

using Options = ata::apps::SimOptions;

std::string ratio(double value, double reference) {
  return reference > 0.0 ? ata::apps::fixed(value / reference, 3) : "-";
}

const StrategyRun& find(const std::vector<StrategyRun>& runs, const std::string& name) {
  return *std::find_if(runs.begin(), runs.end(), [&](const StrategyRun& r) { return r.name == name; });
}

// The run of `name`, or null when it was left out (EOFTA where it does not fit).
const StrategyRun* find_if_ran(const std::vector<StrategyRun>& runs, const std::string& name) {
  const auto it =
      std::find_if(runs.begin(), runs.end(), [&](const StrategyRun& r) { return r.name == name; });
  return it == runs.end() ? nullptr : &*it;
}

// value / reference, or null when there is no reference.
nlohmann::json ratio_json(double value, const StrategyRun* reference, double StrategyRun::*field) {
  if (reference == nullptr || !(reference->*field > 0.0)) return nullptr;
  return value / (reference->*field);
}

nlohmann::json summary_json(const Options& o, const ata::sim::ExperimentConfig& config,
                            const std::vector<StrategyRun>& runs, const std::string& eofta_note,
                            const std::string& frontier_note) {
  const auto& ofta = find(runs, "ofta");
  const StrategyRun* eofta = find_if_ran(runs, "eofta");
  const StrategyRun* frontier = find_if_ran(runs, "frontier");
  nlohmann::json frontier_json = nullptr;
  if (frontier != nullptr && frontier->frontier) {
    const auto& c = *frontier->frontier;
    nlohmann::json candidates = nlohmann::json::array();
    for (const auto& p : c.candidates) {
      candidates.push_back({{"plan", p.plan}, {"wall_time", p.wall_time},
                            {"worker_time", p.worker_time}, {"objective", p.objective}});
    }
    frontier_json = {{"plan", c.plan}, {"probe_objective", c.probe_objective},
                     {"probe_rounds", c.probe_rounds}, {"probe_seed", c.probe_seed},
                     {"eofta_left_out", c.eofta_note.empty() ? nlohmann::json(nullptr)
                                                             : nlohmann::json(c.eofta_note)},
                     {"candidates", candidates}};
  }
  const auto& gta = find(runs, "gta");
  nlohmann::json strategies = nlohmann::json::array();
  for (const auto& r : runs) {
    nlohmann::json s{{"name", r.name},
                     {"wall_time", r.wall_time},
                     {"worker_time", r.worker_time},
                     {"wall_time_vs_ofta", r.wall_time / ofta.wall_time},
                     {"worker_time_vs_ofta", r.worker_time / ofta.worker_time},
                     {"objective", r.objective},
                     {"objective_vs_ofta", r.objective / ofta.objective},
                     {"wall_time_vs_eofta", ratio_json(r.wall_time, eofta, &StrategyRun::wall_time)},
                     {"objective_vs_frontier", ratio_json(r.objective, frontier, &StrategyRun::objective)},
                     {"wall_time_vs_gta", r.wall_time / gta.wall_time},
                     {"worker_time_vs_gta", r.worker_time / gta.worker_time},
                     {"mean_round_time", r.wall_time / static_cast<double>(config.rounds)},
                     {"proxy_loss_regret", r.regret},
                     {"takeovers", r.takeovers},
                     {"backup_copies", r.backup_copies},
                     {"stopped_copies", r.stopped_copies}};
    if (r.final_suboptimality) s["final_suboptimality"] = *r.final_suboptimality;
    if (o.target) {
      s["target_wall_time"] = r.target_wall_time ? nlohmann::json(*r.target_wall_time) : nlohmann::json(nullptr);
      s["target_worker_time"] =
          r.target_worker_time ? nlohmann::json(*r.target_worker_time) : nlohmann::json(nullptr);
    }
    if (r.stream) {
      s["mean_round_time"] = nullptr;  // a stream has no rounds
      s["proxy_loss_regret"] = nullptr;
      s["gradients_applied"] = r.gradients_applied;
      s["gradients_discarded"] = r.gradients_discarded;
      s["tasks_stopped"] = r.tasks_stopped;
      s["stale_share"] = r.stale_share();
      s["workers_busy_at_end"] = r.selected_workers;
      s["probes"] = r.probes;
      s["changes_detected"] = r.changes_detected;
    }
    if (!r.played_plans.empty()) {
      nlohmann::json played = nlohmann::json::array();
      for (const auto& p : r.played_plans) played.push_back({{"plan", p.plan}, {"rounds", p.rounds}});
      nlohmann::json evaluated = nlohmann::json::array();
      for (const auto& e : r.last_evaluation) {
        evaluated.push_back({{"plan", e.plan}, {"wall_per_round", e.wall_time},
                             {"work_per_round", e.worker_time}, {"objective_per_round", e.objective}});
      }
      s["played_plans"] = played;
      s["last_evaluation"] = evaluated;
    }
    if (r.eofta) {  // the last solution: its expected round time, OFTA's, and the lower bound
      s["expected_round_time"] = r.eofta->expected_round_time;
      s["ofta_expected_round_time"] = r.eofta->ofta_expected_round_time;
      s["lower_bound"] = r.eofta->lower_bound;
      s["exact"] = r.eofta->exact;
    }
    strategies.push_back(s);
  }
  nlohmann::json out{{"scenario", config.scenario.name()},
          {"workers", config.scenario.workers()},
          {"batch", config.batch},
          {"rounds", config.rounds},
          {"seed", config.seed},
          {"alpha", *config.policy.alpha},
          {"eta", config.policy.eta},
          {"sgd", o.sgd},
          {"backups", o.backups},
          {"backup_threshold", o.backup_threshold},
          {"backup_copies", o.backup_copies},
          {"work_price", config.objective.price(config.scenario.workers())},
          {"work_price_default", !config.objective.work_price.has_value()},
          {"ata_auto_race", o.ata_auto_race},
          {"eofta", eofta == nullptr ? nlohmann::json(nullptr) : nlohmann::json("ran")},
          {"eofta_left_out", eofta_note.empty() ? nlohmann::json(nullptr) : nlohmann::json(eofta_note)},
          {"frontier", frontier_json},
          {"frontier_left_out", frontier_note.empty() ? nlohmann::json(nullptr) : nlohmann::json(frontier_note)},
          {"strategies", strategies}};
  if (o.target) out["target"] = *o.target;
  if (o.delay_threshold > 0) {
    out["delay_threshold"] = o.delay_threshold;
    out["stops"] = o.stops == "on";
    out["stream_step"] = config.stream_step > 0.0 ? config.stream_step : o.step;
    out["stream_max_gradients"] = config.stream_max_gradients > 0 ? config.stream_max_gradients
                                                                   : config.rounds * config.batch;
  }
  return out;
}

std::string trace_csv(const std::vector<StrategyRun>& runs, bool sgd) {
  std::ostringstream out;
  out.precision(17);
  out << "strategy,round,wall_time,worker_time,objective,proxy_loss_regret"
      << (sgd ? ",suboptimality" : "") << '\n';
  for (const auto& r : runs) {
    for (const auto& p : r.trace) {
      out << r.name << ',' << p.round << ',' << p.wall_time << ',' << p.worker_time << ','
          << p.wall_time + r.work_price * p.worker_time << ',' << p.regret;
      if (sgd) out << ',' << p.suboptimality;
      out << '\n';
    }
  }
  return out.str();
}

// The lower-left convex hull of the (work, wall) points: sorted by work, wall falling.
std::vector<std::pair<double, double>> lower_left_hull(std::vector<std::pair<double, double>> points) {
  std::sort(points.begin(), points.end());
  std::vector<std::pair<double, double>> hull;
  for (const auto& p : points) {
    if (!hull.empty() && p.second >= hull.back().second) continue;  // dominated
    while (hull.size() >= 2) {
      const auto& a = hull[hull.size() - 2];
      const auto& b = hull.back();
      const double cross = (b.first - a.first) * (p.second - a.second) - (b.second - a.second) * (p.first - a.first);
      if (cross > 0.0) break;
      hull.pop_back();
    }
    hull.push_back(p);
  }
  return hull;
}

// Each strategy's (worker time, wall time) over the run, and frontier's probes scaled to K
// rounds, their lower-left hull drawn as the frontier curve.
Figure frontier_figure(const ata::sim::ExperimentConfig& config, const std::vector<StrategyRun>& runs,
                       const ata::sim::FrontierChoice& choice, const std::string& where) {
  Figure f{"frontier.png", "Wall time vs worker time, frontier of fixed plans (" + where + ")",
           "total worker time", "wall time", false, false, {}};
  const double scale = static_cast<double>(config.rounds) / static_cast<double>(choice.probe_rounds);
  std::vector<std::pair<double, double>> points;
  for (const auto& c : choice.candidates) {
    points.emplace_back(c.worker_time * scale, c.wall_time * scale);
    f.series.push_back(Series{"_" + c.plan, {c.worker_time * scale}, {c.wall_time * scale}});
  }
  Series curve{"frontier curve (probes x K/" + std::to_string(choice.probe_rounds) + ")", {}, {}};
  for (const auto& [x, y] : lower_left_hull(points)) {
    curve.x.push_back(x);
    curve.y.push_back(y);
  }
  f.series.push_back(std::move(curve));
  for (const auto& r : runs) f.series.push_back(Series{r.name, {r.worker_time}, {r.wall_time}});
  return f;
}

std::vector<Figure> figures(const ata::sim::ExperimentConfig& config, const std::vector<StrategyRun>& runs) {
  const std::string where = config.scenario.name() + ", n = " + std::to_string(config.scenario.workers()) +
                            ", B = " + std::to_string(config.batch);
  // Streams have no rounds: they join the panels against wall and worker time only.
  const auto panel = [&](std::string file, std::string title, std::string xlabel, std::string ylabel,
                         bool ylog, auto x_of, auto y_of, bool streams = false) {
    Figure f{std::move(file), title + " (" + where + ")", std::move(xlabel), std::move(ylabel), false, ylog, {}};
    for (const auto& r : runs) {
      if (r.stream && !streams) continue;
      Series s{r.name, {}, {}};
      for (const auto& p : r.trace) {
        s.x.push_back(x_of(p));
        s.y.push_back(y_of(p));
      }
      f.series.push_back(std::move(s));
    }
    return f;
  };
  using P = ata::sim::TracePoint;
  const auto round = [](const P& p) { return static_cast<double>(p.round); };
  std::vector<Figure> out;
  if (config.sgd) {
    out.push_back(panel("suboptimality_vs_wall_time.png", "Suboptimality vs wall time", "wall time",
                        "f(x) - f*", true, [](const P& p) { return p.wall_time; },
                        [](const P& p) { return p.suboptimality; }, true));
    out.push_back(panel("suboptimality_vs_worker_time.png", "Suboptimality vs total worker time",
                        "total worker time", "f(x) - f*", true, [](const P& p) { return p.worker_time; },
                        [](const P& p) { return p.suboptimality; }, true));
  }
  out.push_back(panel("average_round_time.png", "Average round time", "round k", "wall time / k", false, round,
                      [](const P& p) { return p.wall_time / static_cast<double>(p.round); }));
  out.push_back(panel("regret.png", "Regret of the proxy loss", "round k",
                      "sum_k l(a_k, mu) - l(a*, mu)", false, round, [](const P& p) { return p.regret; }));
  out.push_back(panel("wall_time.png", "Cumulative wall time", "round k", "wall time", false, round,
                      [](const P& p) { return p.wall_time; }));
  out.push_back(panel("worker_time.png", "Cumulative worker time", "round k", "total worker time", false,
                      round, [](const P& p) { return p.worker_time; }));
  // Wall time against worker time: the two axes a user pays for, one point per trace round.
  out.push_back(panel("wall_vs_worker_time.png", "Wall time vs total worker time", "total worker time",
                      "wall time", false, [](const P& p) { return p.worker_time; },
                      [](const P& p) { return p.wall_time; }));
  if (!runs.empty()) {
    const double price = runs.front().work_price;
    out.push_back(panel("objective.png",
                        "Objective wall + p x worker time, p = " + ata::apps::general(price, 4),
                        "round k", "objective", false, round,
                        [price](const P& p) { return p.wall_time + price * p.worker_time; }));
  }
  if (const StrategyRun* frontier = find_if_ran(runs, "frontier"); frontier != nullptr && frontier->frontier) {
    out.push_back(frontier_figure(config, runs, *frontier->frontier, where));
  }
  return out;
}

// The strategy gantt.png draws: --gantt-strategy, else the first that is not a yardstick.
const StrategyRun* gantt_run(const Options& o, const std::vector<StrategyRun>& runs) {
  if (!o.gantt_strategy.empty()) return find_if_ran(runs, o.gantt_strategy);
  for (const auto& r : runs) {
    if (r.name != "ofta" && r.name != "eofta" && r.name != "gta") return &r;
  }
  return runs.empty() ? nullptr : &runs.front();
}

// A row per worker, a bar per copy of the first few traced rounds, coloured by outcome.
Figure gantt_figure(const ata::sim::ExperimentConfig& config, const StrategyRun& run) {
  constexpr std::size_t kGanttRounds = 3;
  const std::size_t shown = std::min(kGanttRounds, run.traced_rounds.size());
  Figure f{"gantt.png",
           run.name + ": rounds 1-" + std::to_string(shown) + ", a row per worker (" +
               config.scenario.name() + ", n = " + std::to_string(config.scenario.workers()) +
               ", B = " + std::to_string(config.batch) + ")",
           "model time", "worker", false, false, {}};
  for (std::size_t k = 0; k < shown; ++k) {
    const auto& round = run.traced_rounds[k];
    for (const auto& c : round.copies) {
      f.bars.push_back({static_cast<double>(c.worker), round.start + c.start, c.end - c.start,
                        ata::sim::outcome_name(c.outcome)});
    }
  }
  return f;
}

// Worker i's true mean in round k: its model's, or that of its last change by then.
double true_mean(const ata::models::Scenario& scenario, std::size_t worker, std::size_t round) {
  double mean = scenario.models()[worker].mean();
  for (const auto& change : scenario.changes()) {
    if (change.worker == worker && change.round <= round) mean = change.model.mean();
  }
  return mean;
}

// learning.png: round by round, what the first learning strategy (ATA-Auto, ATA-Empirical,
// ATA) believes of a few workers against their true means: the workers that change, then the
// fastest, the slowest and others between, four at most. Null when none of those ran.
std::optional<Figure> learning_figure(const ata::sim::ExperimentConfig& config,
                                      const std::vector<StrategyRun>& runs) {
  const StrategyRun* learner = nullptr;
  for (const char* name : {"ata-auto", "ata-e", "ata"}) {
    learner = find_if_ran(runs, name);
    if (learner != nullptr) break;
  }
  if (learner == nullptr || learner->trace.empty()) return std::nullopt;
  const auto& scenario = config.scenario;
  constexpr std::size_t kShown = 4;
  std::vector<std::size_t> shown;
  const auto show = [&](std::size_t worker) {
    if (shown.size() < kShown && std::find(shown.begin(), shown.end(), worker) == shown.end()) {
      shown.push_back(worker);
    }
  };
  for (const auto& change : scenario.changes()) show(change.worker);
  std::vector<std::size_t> order(scenario.workers());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return true_mean(scenario, a, 1) < true_mean(scenario, b, 1);
  });
  for (std::size_t k = 0; k < kShown && !order.empty(); ++k) {
    show(order[k * (order.size() - 1) / (kShown - 1)]);
  }
  Figure f{"learning.png",
           learner->name + ": learned mean task time, round by round (" + scenario.name() +
               ", n = " + std::to_string(scenario.workers()) + ", B = " +
               std::to_string(config.batch) + ")",
           "round", "mean task time (model units)", false, true, {}};
  for (const std::size_t i : shown) {
    Series learned{"worker " + std::to_string(i) + " learned", {}, {}};
    Series truth{"worker " + std::to_string(i) + " true", {}, {}, true};
    for (const auto& p : learner->trace) {
      const double round = static_cast<double>(p.round);
      truth.x.push_back(round);
      truth.y.push_back(true_mean(scenario, i, p.round));
      if (i < p.learned_means.size() && p.learned_means[i] > 0.0) {  // 0: not measured yet
        learned.x.push_back(round);
        learned.y.push_back(p.learned_means[i]);
      }
    }
    f.series.push_back(std::move(learned));
    f.series.push_back(std::move(truth));
  }
  return f;
}

// The asynchronous comparison: time and worker time to the target, against the greedy
// stream's, and what each stream threw away.
void print_stream_table(const Options& o, const ata::sim::ExperimentConfig& config,
                        const std::vector<StrategyRun>& runs) {
  const StrategyRun* greedy = find_if_ran(runs, "ringmaster");
  const auto to_target = [&](const StrategyRun& r, bool work) -> std::optional<double> {
    if (!o.target) return work ? r.worker_time : r.wall_time;
    return work ? r.target_worker_time : r.target_wall_time;
  };
  const auto cell = [](std::optional<double> v) { return v ? ata::apps::general(*v, 5) : std::string("not reached"); };
  const auto vs = [](std::optional<double> v, std::optional<double> ref) {
    return v && ref && *ref > 0.0 ? ata::apps::fixed(*v / *ref, 3) : std::string("-");
  };
  const std::string what = o.target ? "to f(x) - f* <= " + ata::apps::general(*o.target, 4) : "at the end";
  ata::apps::Table table({"strategy", "time " + what, "worker time", "time/ringmaster",
                          "work/ringmaster", "gradients", "stale share", "busy at end"});
  for (const auto& r : runs) {
    const auto wall = to_target(r, false);
    const auto work = to_target(r, true);
    std::optional<double> greedy_wall;
    std::optional<double> greedy_work;
    if (greedy != nullptr) {
      greedy_wall = to_target(*greedy, false);
      greedy_work = to_target(*greedy, true);
    }
    std::size_t gradients = r.stream ? r.gradients_applied : config.rounds * config.batch;
    if (o.target) gradients = r.target_gradients.value_or(gradients);
    table.add_row({r.name, cell(wall), cell(work), vs(wall, greedy_wall), vs(work, greedy_work), std::to_string(gradients),
                   r.stream ? ata::apps::fixed(r.stale_share(), 3) : std::string("-"),
                   r.stream ? std::to_string(r.selected_workers) : std::string("-")});
  }
  std::printf("\nasynchronous streams (R = %zu, stops %s, step %s) beside the rounds:\n%s", o.delay_threshold,
              o.stops.c_str(), ata::apps::general(config.stream_step > 0.0 ? config.stream_step : o.step, 4).c_str(),
              table.render().c_str());
  std::printf("(worker time includes stopped tasks, discarded ones and, for a stream, those running at its end;\n"
              " gradients: applied by a stream, averaged by the rounds; stale share: a stream's tasks discarded or "
              "stopped at delay R over all it ended)\n");
}

// Refuses a run that would take hours, and warns about one that takes a while.
void check_work(const Options& o, const ata::models::Scenario& scenario) {
  const double draws = ata::apps::estimated_draws(o, scenario.workers());
  const auto streams = static_cast<std::size_t>(std::count_if(
      o.strategies.begin(), o.strategies.end(),
      [](const std::string& s) { return ata::sim::stream_selection(s).has_value(); }));
  std::string what = "about " + ata::apps::general(draws, 2) + " task-time draws (--batch " +
                     std::to_string(o.batch) + " x --rounds " + std::to_string(o.rounds) + " x " +
                     std::to_string(o.strategies.size() - streams) + " strategies";
  if (streams > 0) {
    const std::size_t gradients = o.stream_gradients > 0 ? o.stream_gradients : o.batch * o.rounds;
    what += ", and up to " + ata::apps::general(static_cast<double>(gradients), 3) +
            " gradients x " + std::to_string(streams) + " streams";
  }
  what += ")";
  if (draws > ata::apps::kMaxSimDraws) {
    throw ata::InvalidArgument(what + " is more than the limit of " +
                               ata::apps::general(ata::apps::kMaxSimDraws, 2) +
                               " (hours of work); lower --batch or --rounds");
  }
  if (draws > ata::apps::kWarnSimDraws) ata::apps::warn("ata-sim", what + ": this takes a while");
}

int run(const Options& o) {
  // Outputs first: a path that cannot be written fails now, not after the run.
  if (!o.json_path.empty()) ata::apps::check_output_file("--json", o.json_path);
  if (!o.csv_path.empty()) ata::apps::check_output_file("--csv", o.csv_path);
  if (!o.plot_dir.empty()) ata::apps::check_output_folder("--plot", o.plot_dir);
  if (!o.trace_path.empty()) ata::apps::check_output_file("--trace", o.trace_path);
  if (!o.gantt_strategy.empty() &&
      std::find(o.strategies.begin(), o.strategies.end(), o.gantt_strategy) == o.strategies.end()) {
    throw ata::apps::UsageError("--gantt-strategy: not one of the strategies run, got '" +
                                o.gantt_strategy + "'");
  }
  const std::size_t change =
      o.change_round ? o.change_round : std::max<std::size_t>(1, o.rounds / 2);
  auto scenario =
      ata::apps::scenario_from_flag(o.scenario, o.workers, ata::apps::kDefaultSimWorkers, change);
  ata::sim::ExperimentConfig config{
      std::move(scenario), o.batch, o.rounds, o.seed, {}, o.sgd, o.dim, o.step, o.noise, 400, {},
      ata::Objective{o.work_price}};
  config.backups = ata::BackupOptions{}
                       .set_mode(ata::parse_backup_mode(o.backups))
                       .set_threshold_multiple(o.backup_threshold)
                       .set_max_copies(o.backup_copies);
  config.sgd_target = o.target;
  config.stream_threshold = o.delay_threshold;
  config.stream_stops = o.stops == "on";
  config.stream_step = o.stream_step.value_or(0.0);
  config.stream_max_gradients = o.stream_gradients;
  config.traced_rounds = o.trace_path.empty() && o.plot_dir.empty() ? 0 : o.trace_rounds;
  config.record_learning = !o.plot_dir.empty();
  check_work(o, config.scenario);
  config.policy.alpha = o.alpha > 0.0 ? o.alpha : config.scenario.max_mean();
  config.policy.eta = o.eta;
  config.policy.race = ata::apps::ata_auto_race(o.ata_auto_race);
  // The EOFTA yardstick is sized before anything runs, and left out when it does not fit.
  std::vector<std::string> names = o.strategies;
  std::string eofta_note;
  if (std::find(names.begin(), names.end(), "eofta") != names.end()) {
    const auto cost = ata::sim::estimate_eofta_cost(config, ata::apps::kMaxEoftaSweepTerms);
    if (!cost.fits()) {
      eofta_note = cost.reason;
      names.erase(std::find(names.begin(), names.end(), "eofta"));
    }
  }

  // The frontier yardstick likewise: its probes are bounded, and it is left out above the limit.
  std::string frontier_note;
  config.frontier_probe_rounds = o.frontier_probe_rounds;
  config.frontier_eofta_sweep_terms = ata::apps::kMaxEoftaSweepTerms;
  if (std::find(names.begin(), names.end(), "frontier") != names.end()) {
    const double probe_draws =
        static_cast<double>(ata::sim::frontier_max_probes(config.scenario.workers())) *
        static_cast<double>(std::min(config.rounds, config.frontier_probe_rounds)) *
        static_cast<double>(config.batch + config.scenario.workers());
    if (probe_draws > ata::apps::kMaxFrontierProbeDraws) {
      frontier_note = "its probes would take about " + ata::apps::general(probe_draws, 2) +
                      " task-time draws, more than the limit of " +
                      ata::apps::general(ata::apps::kMaxFrontierProbeDraws, 2) +
                      " (lower --frontier-probe-rounds)";
      names.erase(std::find(names.begin(), names.end(), "frontier"));
    }
  }

  std::printf("ata-sim: scenario %s, n = %zu workers, B = %zu, K = %zu rounds, seed %llu\n",
              config.scenario.name().c_str(), config.scenario.workers(), config.batch, config.rounds,
              static_cast<unsigned long long>(config.seed));
  if (o.backups != "off") {
    std::printf("         backups %s: threshold %g x learned mean, at most %zu copies per task\n",
                o.backups.c_str(), o.backup_threshold, o.backup_copies);
  }
  std::printf("         alpha = %g (ata), eta = %g (ata-e)%s\n", *config.policy.alpha, config.policy.eta,
              o.sgd ? (", SGD on the quadratic, d = " + std::to_string(o.dim)).c_str() : "");
  const double price = config.objective.price(config.scenario.workers());
  std::printf("         objective = wall + p x worker time, p = %s%s\n",
              ata::apps::general(price, 4).c_str(), o.work_price ? "" : " (1/n, the default)");
  if (!eofta_note.empty()) std::printf("note: EOFTA yardstick left out: %s\n", eofta_note.c_str());
  if (!frontier_note.empty()) std::printf("note: frontier yardstick left out: %s\n", frontier_note.c_str());

  std::vector<StrategyRun> runs(names.size());
  std::string late_eofta_note;  // written by EOFTA's task alone
  {
    ata::apps::Progress progress("ata-sim");
    std::vector<std::atomic<double>> done(names.size());
    const auto threads = std::max(2u, std::thread::hardware_concurrency());
    tbb::global_control parallelism(tbb::global_control::max_allowed_parallelism, threads);
    tbb::parallel_for(std::size_t{0}, names.size(), [&](std::size_t j) {
      const auto report = [&](double fraction) {
        done[j] = fraction;
        double sum = 0.0;
        for (const auto& d : done) sum += d;
        progress.update(sum / static_cast<double>(names.size()), names[j]);
      };
      if (names[j] != "eofta") {
        runs[j] = ata::sim::run_strategy(config, names[j], report);
        return;
      }
      // The sizing above is an estimate: should the solver still refuse, the yardstick is left
      // out like one that was sized out, and the other strategies' run stands.
      try {
        runs[j] = ata::sim::run_strategy(config, names[j], report);
      } catch (const ata::InvalidArgument& e) {
        late_eofta_note = e.what();
        runs[j].name.clear();
      }
    });
  }
  if (!late_eofta_note.empty()) {
    std::erase_if(runs, [](const StrategyRun& r) { return r.name.empty(); });
    eofta_note = late_eofta_note;
    std::printf("note: EOFTA yardstick left out: %s\n", eofta_note.c_str());
  }

  const auto& ofta = find(runs, "ofta");
  const StrategyRun* eofta = find_if_ran(runs, "eofta");
  const auto& gta = find(runs, "gta");
  const StrategyRun* frontier = find_if_ran(runs, "frontier");
  std::vector<std::string> header{"strategy", "wall time", "worker time", "objective",
                                  "wall/OFTA", "work/OFTA", "obj/OFTA"};
  if (eofta != nullptr) header.emplace_back("wall/EOFTA");
  if (frontier != nullptr) header.emplace_back("obj/frontier");
  for (const char* h : {"wall/GTA", "work/GTA", "regret"}) header.emplace_back(h);
  if (o.sgd) header.emplace_back("f(x)-f*");
  ata::apps::Table table(header);
  for (const auto& r : runs) {
    std::vector<std::string> row{r.name, ata::apps::general(r.wall_time, 5), ata::apps::general(r.worker_time, 5),
                                 ata::apps::general(r.objective, 5),
                                 ratio(r.wall_time, ofta.wall_time), ratio(r.worker_time, ofta.worker_time),
                                 ratio(r.objective, ofta.objective)};
    if (eofta != nullptr) row.push_back(ratio(r.wall_time, eofta->wall_time));
    if (frontier != nullptr) row.push_back(ratio(r.objective, frontier->objective));
    for (auto cell : {ratio(r.wall_time, gta.wall_time), ratio(r.worker_time, gta.worker_time),
                      r.stream ? std::string("-") : ata::apps::general(r.regret, 4)}) {
      row.push_back(std::move(cell));
    }
    if (o.sgd) row.push_back(ata::apps::general(r.final_suboptimality.value_or(NAN), 4));
    table.add_row(std::move(row));
  }
  std::printf("\n%s", table.render().c_str());
  std::printf("(times in model units; objective = wall + %s x worker time; ratios < 1 beat the yardstick; "
              "regret: sum of proxy-loss excess over OFTA)\n",
              ata::apps::general(price, 4).c_str());
  if (!eofta_note.empty()) std::printf("(no EOFTA column: the yardstick was left out, see the note above)\n");
  if (frontier != nullptr && frontier->frontier) {
    const auto& c = *frontier->frontier;
    std::printf("frontier: %s (probe objective %s over %zu probe rounds on seed %llu, best of %zu candidates)\n",
                c.plan.c_str(), ata::apps::general(c.probe_objective, 5).c_str(), c.probe_rounds,
                static_cast<unsigned long long>(c.probe_seed), c.candidates.size());
  }

  if (o.target || std::any_of(runs.begin(), runs.end(), [](const StrategyRun& r) { return r.stream; })) {
    print_stream_table(o, config, runs);
  }

  for (const auto& r : runs) {
    if (r.played_plans.empty()) continue;
    std::printf("%s played: %s of the rounds\n", r.name.c_str(),
                ata::apps::played_shares(r.played_plans, config.rounds).c_str());
    if (r.last_evaluation.empty()) continue;
    std::vector<const ata::sim::FrontierCandidate*> ranked;
    for (const auto& e : r.last_evaluation) ranked.push_back(&e);
    std::stable_sort(ranked.begin(), ranked.end(),
                     [](const auto* a, const auto* b) { return a->objective < b->objective; });
    std::string why;  // the three best and the quotas, by estimated objective per round
    for (std::size_t j = 0; j < ranked.size(); ++j) {
      if (j >= 3 && ranked[j]->plan != "quotas") continue;
      why += (why.empty() ? "" : ", ") + ranked[j]->plan + " " + ata::apps::general(ranked[j]->objective, 4);
    }
    std::printf("%s's last evaluation (estimated objective per round): %s\n", r.name.c_str(), why.c_str());
  }

  if (!o.json_path.empty()) {
    ata::apps::write_file(o.json_path, summary_json(o, config, runs, eofta_note, frontier_note).dump(2) + "\n");
    std::printf("wrote %s\n", o.json_path.c_str());
  }
  if (!o.csv_path.empty()) {
    ata::apps::write_file(o.csv_path, trace_csv(runs, o.sgd));
    std::printf("wrote %s\n", o.csv_path.c_str());
  }
  if (!o.trace_path.empty()) {
    std::vector<ata::sim::TraceProcess> processes;
    for (const auto& r : runs) processes.push_back({r.name, config.scenario.workers(), r.traced_rounds});
    ata::sim::TraceSize size;
    const std::string text = ata::sim::chrome_trace_json(processes, o.trace_unit_us, &size);
    ata::apps::write_file(o.trace_path, text);
    std::printf("wrote %s: %zu strategies x %zu rounds, %zu events, %zu bytes (1 model unit = %s us)\n",
                o.trace_path.c_str(), size.processes,
                size.processes == 0 ? std::size_t{0} : size.rounds / size.processes, size.events,
                text.size(), ata::apps::general(o.trace_unit_us, 6).c_str());
  }
  if (!o.plot_dir.empty()) {
    auto all = figures(config, runs);
    const StrategyRun* gantt = gantt_run(o, runs);
    if (gantt != nullptr && !gantt->traced_rounds.empty()) all.push_back(gantt_figure(config, *gantt));
    if (auto learning = learning_figure(config, runs)) all.push_back(std::move(*learning));
    for (const auto& file : ata::apps::plot_figures(o.plot_dir, all)) {
      std::printf("wrote %s\n", file.c_str());
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return ata::apps::run_reporting_errors("ata-sim", [&] {
    const auto command_line = ata::apps::parse_sim_options(argc, argv);
    if (command_line.help) {
      std::fputs(command_line.help->c_str(), stdout);
      return 0;
    }
    return run(command_line.options);
  });
}

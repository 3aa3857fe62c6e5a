#include "training_app.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <sstream>

#include "app_support.hpp"
#include "ata/core/error.hpp"
#include "dataset.hpp"
#include "training_lanes.hpp"
#include "trace_output.hpp"
#include "training_options.hpp"

namespace ata::ml {

namespace {

using Options = TrainingOptions;

// Above these, a run goes on with a warning that it will take long.
constexpr double kWarnOptimumWork = 1e10;
constexpr double kWarnTrainingTasks = 1e9;

// Each round keeps B results of the problem's dimension: refused before the run if they would
// not fit.
void check_round_memory(const Options& o, std::size_t dim, const std::string& what) {
  apps::require_memory("--batch " + std::to_string(o.batch) + " results of " + std::to_string(dim) +
                           " numbers (" + what + ") per round",
                       {o.batch, dim, sizeof(double)}, "; lower --batch");
}

models::Scenario load_scenario(const TrainingOptions& o) {
  if (o.scenario == kNoScenario) {
    // Only the worker count: the workers run their tasks without simulated delay.
    const std::size_t n = o.workers != 0 ? o.workers : kDefaultTrainingWorkers;
    return models::Scenario(kNoScenario,
                            std::vector<models::TimeModel>(n, models::TimeModel::constant(0.0)));
  }
  auto scenario = apps::scenario_from_flag(
      o.scenario, o.workers, kDefaultTrainingWorkers,
      o.change_round != 0 ? o.change_round : std::max<std::size_t>(1, o.rounds / 2));
  if (scenario.workers() > kMaxTrainingWorkers) {
    throw InvalidArgument("scenario " + o.scenario + " has " + std::to_string(scenario.workers()) +
                          " workers, more than the " + std::to_string(kMaxTrainingWorkers) +
                          " threads ata-sgd and ata-prox start at most");
  }
  return scenario;
}

const TrainingRun& find(const std::vector<TrainingRun>& runs, const std::string& name) {
  return *std::find_if(runs.begin(), runs.end(),
                       [&](const TrainingRun& r) { return r.name == name; });
}

std::string ratio(double a, double b) { return b > 0.0 ? apps::fixed(a / b, 2) : "-"; }

std::string microseconds(double seconds) { return apps::fixed(seconds * 1e6, 1); }

// Whether OFTA's means must be measured: the machine, not a scenario, sets the speeds.
bool calibrates(const Options& o) {
  return o.calibration_tasks != 0 || o.scenario == kNoScenario || !o.cpus.empty();
}

// Each worker's calibrated mean against what every strategy learned, in microseconds.
void print_means(const Options& o, const std::vector<double>& calibrated,
                 const std::vector<TrainingRun>& runs) {
  std::vector<std::string> header{"worker", "cpu", "factor", "calibrated"};
  for (const auto& r : runs) header.push_back(r.name);
  apps::Table table(header);
  for (std::size_t i = 0; i < calibrated.size(); ++i) {
    std::vector<std::string> row{std::to_string(i),
                                 o.cpus.empty() ? "-" : std::to_string(o.cpus[i]),
                                 o.work_factors.empty() ? "1" : std::to_string(o.work_factors[i]),
                                 microseconds(calibrated[i])};
    for (const auto& r : runs) {  // a trainer may not report what its policy learned
      row.push_back(i < r.learned_means.size() ? microseconds(r.learned_means[i]) : "-");
    }
    table.add_row(std::move(row));
  }
  std::printf(
      "\nMean task time per worker (us): calibrated, and as each strategy saw it at the end:\n%s",
      table.render().c_str());
}

// learning.png: round by round, what the first learning strategy (ATA-Auto, ATA-Empirical,
// ATA, in that order) believes of a few workers, from the fastest to the slowest, against
// their calibrated means, or the scenario's model means (dotted). None when no such
// strategy ran or recorded.
std::optional<apps::Figure> learning_figure(const std::vector<TrainingRun>& runs,
                                            const std::vector<double>& reference, bool calibrated,
                                            const std::string& where) {
  const TrainingRun* learner = nullptr;
  for (const char* name : {"ata-auto", "ata-e", "ata"}) {
    const auto it = std::find_if(runs.begin(), runs.end(), [&](const TrainingRun& r) {
      return r.name == name && !r.learning.empty();
    });
    if (it != runs.end()) {
      learner = &*it;
      break;
    }
  }
  if (learner == nullptr || reference.empty()) return std::nullopt;
  // Up to four workers spread over the reference means: the fastest, the slowest, two between.
  std::vector<std::size_t> order(reference.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return reference[a] < reference[b]; });
  std::vector<std::size_t> shown;
  constexpr std::size_t kShown = 4;
  for (std::size_t k = 0; k < std::min(kShown, order.size()); ++k) {
    const std::size_t at = order.size() == 1 ? 0 : k * (order.size() - 1) / (kShown - 1);
    if (std::find(shown.begin(), shown.end(), order[at]) == shown.end()) shown.push_back(order[at]);
  }
  apps::Figure f{"learning.png",
                 learner->name + ": learned mean task time, round by round (" + where + ")",
                 "round", "mean task time (us)", false, true, {}};
  const double first = static_cast<double>(learner->learning.front().round);
  const double last = static_cast<double>(learner->learning.back().round);
  for (const std::size_t i : shown) {
    apps::Series learned{"worker " + std::to_string(i) + " learned", {}, {}};
    for (const LearnedPoint& p : learner->learning) {
      if (i >= p.means.size() || !(p.means[i] > 0.0)) continue;  // not measured yet
      learned.x.push_back(static_cast<double>(p.round));
      learned.y.push_back(p.means[i] * 1e6);
    }
    f.series.push_back(std::move(learned));
    const std::string known = calibrated ? " calibrated" : " model mean";
    f.series.push_back({"worker " + std::to_string(i) + known,
                        {first, last},
                        {reference[i] * 1e6, reference[i] * 1e6},
                        true});
  }
  return f;
}

// The streams beside the others: time and worker time to the target against greedy
// Ringmaster's, and what each stream threw away as stale. Nothing without a stream.
void print_stream_table(const Options& o, const TrainingConfig& config,
                        const std::vector<TrainingRun>& runs) {
  const auto greedy = std::find_if(runs.begin(), runs.end(),
                                   [](const TrainingRun& r) { return r.name == "ringmaster"; });
  if (std::none_of(runs.begin(), runs.end(), [](const TrainingRun& r) { return r.stream; })) return;
  apps::Table table({"strategy", "time (s)", "worker time (s)", "time/ringmaster",
                     "work/ringmaster", "results applied", "discarded", "stopped", "stale share",
                     "busy at end"});
  for (const auto& r : runs) {
    const bool vs = greedy != runs.end();
    table.add_row({r.name, apps::fixed(r.wall_seconds, 3), apps::fixed(r.worker_seconds, 3),
                   vs ? ratio(r.wall_seconds, greedy->wall_seconds) : "-",
                   vs ? ratio(r.worker_seconds, greedy->worker_seconds) : "-",
                   r.stream ? std::to_string(r.gradients_applied) : "-",
                   r.stream ? std::to_string(r.gradients_discarded) : "-",
                   r.stream ? std::to_string(r.tasks_stopped) : "-",
                   r.stream ? apps::fixed(r.stale_share(), 3) : "-",
                   r.stream ? std::to_string(r.workers_busy_at_end) : "-"});
  }
  std::printf("\nAsynchronous streams (R = %zu, stops %s, step %s, the loss checked every %zu "
              "results) beside the rounds:\n%s",
              o.delay_threshold, o.stops.c_str(),
              apps::general(config.stream.step > 0.0 ? config.stream.step : config.step, 4).c_str(),
              config.batch, table.render().c_str());
  std::printf("(worker time includes stopped and discarded tasks; stale share: a stream's tasks "
              "discarded or stopped at delay R over all it ended)\n");
}

// worker_kind: what the workers are ("worker ranks"), or nullptr for the lanes of `o`.
int run(const Options& o, Method method, const char* program, const Trainer& trainer,
        const char* worker_kind) {
  // Outputs first: a path that cannot be written fails now, not after the run.
  if (!o.json_path.empty()) apps::check_output_file("--json", o.json_path);
  if (!o.csv_path.empty()) apps::check_output_file("--csv", o.csv_path);
  if (!o.plot_dir.empty()) apps::check_output_folder("--plot", o.plot_dir);
  if (!o.trace_path.empty()) apps::check_output_file("--trace", o.trace_path);
  TrainingConfig config = make_training_config(o, method);
  // The plots' gantt.png draws traced rounds too, and learning.png what the policies learned.
  config.traced_rounds = o.trace_path.empty() && o.plot_dir.empty() ? 0 : o.trace_rounds;
  config.record_learning = !o.plot_dir.empty();
  const auto problem = make_training_problem(o, program);
  if (o.delay_threshold > 0) require_stream_memory(config, problem->dim());
  const double tasks = static_cast<double>(o.batch) * static_cast<double>(o.rounds) *
                       static_cast<double>(o.strategies.size());
  if (tasks > kWarnTrainingTasks) {
    apps::warn(program, "up to " + apps::general(tasks, 2) + " tasks (--batch " +
                            std::to_string(o.batch) + " x --rounds " + std::to_string(o.rounds) +
                            " x " + std::to_string(o.strategies.size()) +
                            " strategies): this may take a while");
  }
  const auto& names = o.strategies;

  const double initial_gap = problem->loss(problem->initial_point()) - problem->optimal_loss();
  std::printf("%s: %s\n", program, problem->describe().c_str());
  std::printf("  %s, f* = %.6g, target: f - f* <= %.3g (%g of the initial gap)\n",
              method == Method::sgd ? "minibatch SGD" : "minibatch stochastic proximal point",
              problem->optimal_loss(), o.target_gap * initial_gap, o.target_gap);
  const std::string workers =
      worker_kind != nullptr
          ? std::to_string(config.scenario.workers()) + " " + worker_kind
          : std::string("lanes ") + lane_kind_name(config.lanes) + ", " + describe_lanes(config);
  const std::string delays = config.simulated_delays
                                 ? "scenario " + config.scenario.name() +
                                       ", 1 model unit = " + apps::general(o.unit_us) + " us of " +
                                       (o.burn ? "busy spinning" : "sleep")
                                 : std::string("no simulated delay");
  std::printf("  workers: %s; %s; B = %zu, step %g, at most %zu rounds, seed %llu\n",
              workers.c_str(), delays.c_str(), config.batch, config.step, config.max_rounds,
              static_cast<unsigned long long>(o.seed));
  std::vector<double> calibrated;
  if (calibrates(o)) {
    const std::size_t per_worker =
        o.calibration_tasks != 0 ? o.calibration_tasks : kDefaultCalibrationTasks;
    // Said before it runs: the pass takes a while.
    const std::size_t n = config.scenario.workers();
    const std::string who =
        n == 1 ? "the worker alone" : "all " + std::to_string(n) + " workers at once";
    std::printf("  calibrating: %s, %zu tasks each (the training's, at x0, seed %llu); ",
                who.c_str(), per_worker, static_cast<unsigned long long>(o.seed));
    std::fflush(stdout);
    calibrated = calibrate_means(*problem, config, per_worker);
    std::string means;
    for (const double m : calibrated) means += (means.empty() ? "" : " ") + microseconds(m);
    std::printf("measured means (us): %s\n", means.c_str());
    config.means = calibrated;
    if (!(o.alpha > 0.0)) {
      config.policy.alpha = *std::max_element(calibrated.begin(), calibrated.end());
    }
  }

  std::vector<TrainingRun> runs;
  {
    apps::Progress progress(program);
    for (std::size_t s = 0; s < names.size(); ++s) {
      runs.push_back(trainer(*problem, config, names[s], [&](std::size_t k) {
        const double share = static_cast<double>(k) / static_cast<double>(config.max_rounds);
        progress.update((static_cast<double>(s) + share) / static_cast<double>(names.size()),
                        names[s] + " round " + std::to_string(k));
      }));
    }
  }

  const double price = config.objective.price(config.scenario.workers());
  for (auto& r : runs) r.objective = r.wall_seconds + price * r.worker_seconds;
  const auto& gta = find(runs, "gta");
  const auto& ofta = find(runs, "ofta");
  apps::Table table({"strategy", "rounds", "time (s)", "worker time (s)", "objective", "time/GTA",
                     "work/GTA", "time/OFTA", "work/OFTA", "obj/OFTA", "final f-f*", "overhead",
                     "stale"});
  for (const auto& r : runs) {
    // A stream's rounds are the results it applied.
    const std::string rounds = std::to_string(r.rounds) + (r.stream ? " applied" : "");
    table.add_row(
        {r.name, r.reached ? rounds : rounds + " (not reached)",
         apps::fixed(r.wall_seconds, 3), apps::fixed(r.worker_seconds, 3),
         apps::fixed(r.objective, 3),
         ratio(r.wall_seconds, gta.wall_seconds), ratio(r.worker_seconds, gta.worker_seconds),
         ratio(r.wall_seconds, ofta.wall_seconds), ratio(r.worker_seconds, ofta.worker_seconds),
         ratio(r.objective, ofta.objective),
         apps::general(r.final_gap, 3),
         r.stream ? std::string("-") : apps::fixed(100.0 * r.overhead_share, 1) + "%",
         r.stream ? apps::fixed(100.0 * r.stale_share(), 1) + "%" : std::string("-")});
  }
  std::printf("\nTime and worker time to reach the target (real seconds on this machine%s):\n%s",
              calibrated.empty() ? "" : ", OFTA with the calibrated means", table.render().c_str());
  std::printf("(objective = time + p x worker time, p = %s%s)\n", apps::general(price, 4).c_str(),
              o.work_price ? "" : " = 1/n, the default");
  print_stream_table(o, config, runs);
  for (const auto& r : runs) {
    if (r.played_plans.empty()) continue;
    std::printf("%s played: %s of the rounds\n", r.name.c_str(),
                apps::played_shares(r.played_plans, r.rounds).c_str());
  }
  if (!calibrated.empty()) print_means(o, calibrated, runs);

  if (!o.json_path.empty()) {
    nlohmann::json strategies = nlohmann::json::array();
    for (const auto& r : runs) {
      strategies.push_back({{"name", r.name},
                            {"reached_target", r.reached},
                            {"rounds", r.rounds},
                            {"wall_time", r.wall_seconds},
                            {"worker_time", r.worker_seconds},
                            {"wall_time_vs_gta", r.wall_seconds / gta.wall_seconds},
                            {"worker_time_vs_gta", r.worker_seconds / gta.worker_seconds},
                            {"wall_time_vs_ofta", r.wall_seconds / ofta.wall_seconds},
                            {"worker_time_vs_ofta", r.worker_seconds / ofta.worker_seconds},
                            {"objective", r.objective},
                            {"objective_vs_ofta", r.objective / ofta.objective},
                            {"final_loss", r.final_gap + problem->optimal_loss()},
                            {"final_gap", r.final_gap},
                            {"overhead_share", r.overhead_share},
                            {"learned_means", r.learned_means}});
      if (r.stream) {
        auto& s = strategies.back();
        s["stream"] = true;
        s["gradients_applied"] = r.gradients_applied;
        s["gradients_discarded"] = r.gradients_discarded;
        s["tasks_stopped"] = r.tasks_stopped;
        s["stale_share"] = r.stale_share();
        s["workers_busy_at_end"] = r.workers_busy_at_end;
        s["probes"] = r.probes;
        s["changes_detected"] = r.changes_detected;
        s["max_applied_delay"] = r.max_applied_delay;
        s["min_discarded_delay"] = r.min_discarded_delay;
      }
      if (!r.played_plans.empty()) {
        nlohmann::json played = nlohmann::json::array();
        for (const auto& p : r.played_plans) played.push_back({{"plan", p.plan}, {"rounds", p.rounds}});
        strategies.back()["played_plans"] = played;
      }
    }
    nlohmann::json summary{{"problem", problem->describe()},
                           {"method", method == Method::sgd ? "sgd" : "prox"},
                           {"scenario", config.scenario.name()},
                           {"workers", config.scenario.workers()},
                           {"batch", config.batch},
                           {"max_rounds", config.max_rounds},
                           {"seed", o.seed},
                           {"unit_us", o.unit_us},
                           {"backups", o.backups},
                           {"step", config.step},
                           {"optimal_loss", problem->optimal_loss()},
                           {"target_gap", o.target_gap * initial_gap},
                           {"work_price", price},
                           {"work_price_default", !o.work_price.has_value()},
                           {"ata_auto_race", o.ata_auto_race},
                           {"strategies", strategies}};
    summary["simulated_delays"] = config.simulated_delays;
    if (worker_kind == nullptr) {
      summary["lanes"] = lane_kind_name(config.lanes);
      summary["cpus"] = config.cpus;
      summary["work_factors"] = config.work_factors;
    }
    if (!calibrated.empty()) summary["calibrated_means"] = calibrated;
    if (o.delay_threshold > 0) {
      summary["delay_threshold"] = o.delay_threshold;
      summary["stops"] = config.stream.stops;
      summary["stream_step"] = config.stream.step > 0.0 ? config.stream.step : config.step;
      summary["stream_max_gradients"] = config.stream.max_gradients > 0
                                            ? config.stream.max_gradients
                                            : config.max_rounds * config.batch;
    }
    apps::write_file(o.json_path, summary.dump(2) + "\n");
    std::printf("wrote %s\n", o.json_path.c_str());
  }
  if (!o.csv_path.empty()) {
    std::ostringstream csv;
    csv.precision(12);
    csv << "strategy,round,wall_time,worker_time,objective,gap\n";
    for (const auto& r : runs) {
      for (const auto& p : r.trace)
        csv << r.name << ',' << p.round << ',' << p.wall_seconds << ',' << p.worker_seconds << ','
            << p.wall_seconds + price * p.worker_seconds << ',' << p.gap << '\n';
    }
    apps::write_file(o.csv_path, csv.str());
    std::printf("wrote %s\n", o.csv_path.c_str());
  }
  std::vector<runtime::TracedProcess> traced;
  for (auto& r : runs) {
    traced.push_back({r.name, config.scenario.workers(), std::move(r.traced),
                      std::move(r.traced_streams)});
  }
  if (!o.trace_path.empty()) apps::write_trace(o.trace_path, traced);
  if (!o.plot_dir.empty()) {
    const std::string where = config.scenario.name() +
                              ", n = " + std::to_string(config.scenario.workers()) +
                              ", B = " + std::to_string(config.batch);
    std::vector<apps::Figure> figures;
    for (const bool by_work : {false, true}) {
      apps::Figure f{by_work ? "loss_vs_worker_time.png" : "loss_vs_wall_time.png",
                     std::string(by_work ? "Loss vs total worker time" : "Loss vs wall time") +
                         " (" + where + ")",
                     by_work ? "total worker time (s)" : "wall time (s)",
                     "f(x) - f*",
                     false,
                     true,
                     {}};
      for (const auto& r : runs) {
        apps::Series series{r.name, {}, {}};
        for (const auto& p : r.trace) {
          series.x.push_back(by_work ? p.worker_seconds : p.wall_seconds);
          series.y.push_back(std::max(p.gap, 1e-16));
        }
        f.series.push_back(std::move(series));
      }
      figures.push_back(std::move(f));
    }
    // The first learner, as in learning.png, else the first strategy that is not a yardstick
    // (OFTA knows the means, GTA races).
    auto gantt = traced.end();
    for (const char* name : {"ata-auto", "ata-e", "ata"}) {
      gantt = std::find_if(traced.begin(), traced.end(), [&](const auto& p) {
        return p.name == name && !p.batches.empty();
      });
      if (gantt != traced.end()) break;
    }
    if (gantt == traced.end()) {
      gantt = std::find_if(traced.begin(), traced.end(), [](const auto& p) {
        return p.name != "ofta" && p.name != "gta" && !p.batches.empty();
      });
    }
    constexpr std::size_t kGanttRounds = 3;
    if (gantt != traced.end()) figures.push_back(apps::gantt_figure(*gantt, kGanttRounds, where));
    const std::vector<double> reference = calibrated.empty() ? true_means_seconds(config) : calibrated;
    if (auto learning = learning_figure(runs, reference, !calibrated.empty(), where)) {
      figures.push_back(std::move(*learning));
    }
    for (const auto& file : apps::plot_figures(o.plot_dir, figures))
      std::printf("wrote %s\n", file.c_str());
  }
  return 0;
}

}  // namespace

std::unique_ptr<Problem> make_training_problem(const TrainingOptions& o, const char* program) {
  if (o.problem == "quadratic") {
    check_round_memory(o, o.dim, "--dim");
    return std::make_unique<QuadraticProblem>(o.dim, o.noise);
  }
  const bool classify = o.problem == "logistic";
  Dataset data;
  std::string name;
  if (o.data_path.empty()) {
    data = classify ? make_classification(o.rows, o.cols, o.seed)
                    : make_regression(o.rows, o.cols, o.seed);
    name = "synthetic data (seed " + std::to_string(o.seed) + ")";
  } else {
    data = load_libsvm(o.data_path);
    if (classify) as_plus_minus_one(data, o.data_path);
    scale_columns(data);
    name = o.data_path;
  }
  check_round_memory(o, data.cols, "the data's features");
  // f* is computed exactly: a pass over the data costs rows x cols^2 multiply-adds (the Hessian
  // or the normal equations), and logistic regression takes several.
  const double pass = static_cast<double>(data.rows) * static_cast<double>(data.cols) *
                      static_cast<double>(data.cols);
  if (pass > kWarnOptimumWork) {
    apps::warn(program, "computing f* exactly on " + std::to_string(data.rows) + " x " +
                            std::to_string(data.cols) + " data takes about " +
                            apps::general(pass, 2) + " multiply-adds per pass: this takes a while");
  }
  if (classify) return std::make_unique<LogisticProblem>(std::move(data), o.l2, name);
  return std::make_unique<LeastSquaresProblem>(std::move(data), name);
}

TrainingConfig make_training_config(const TrainingOptions& o, Method method) {
  TrainingConfig config;
  config.method = method;
  config.scenario = load_scenario(o);
  // --unit-us is bounded by its flag, so this converts without overflow.
  config.unit = std::chrono::nanoseconds(std::llround(o.unit_us * 1000.0));
  config.burn = o.burn;
  config.batch = o.batch;
  config.max_rounds = o.rounds;
  config.step = o.step;
  config.target_gap = o.target_gap;
  config.seed = o.seed;
  config.lanes = o.lanes;
  config.simulated_delays = o.scenario != kNoScenario;
  config.cpus = o.cpus;
  config.work_factors = o.work_factors;
  // A scenario file's worker count is known once it is read.
  for (const auto& [flag, length] :
       {std::pair{"--cpus", o.cpus.size()}, std::pair{"--work-factors", o.work_factors.size()}}) {
    if (length != 0 && length != config.scenario.workers()) {
      throw InvalidArgument(std::string(flag) + ": " + std::to_string(length) + " values for the " +
                            std::to_string(config.scenario.workers()) + " workers of " +
                            o.scenario + "; give one per worker");
    }
  }
  const auto means = true_means_seconds(config);
  config.policy.alpha =
      o.alpha > 0.0 ? o.alpha * 1e-6 : *std::max_element(means.begin(), means.end());
  config.policy.eta = o.eta;
  config.backups = BackupOptions{}.set_mode(parse_backup_mode(o.backups));
  config.objective.work_price = o.work_price;
  config.policy.race = apps::ata_auto_race(o.ata_auto_race);
  config.policy.objective = config.objective;  // what ata-auto's plans minimise
  config.stream.delay_threshold = o.delay_threshold;
  config.stream.stops = o.stops == "on";
  config.stream.step = o.stream_step.value_or(0.0);
  config.stream.max_gradients = o.stream_gradients;
  return config;
}

int training_main(int argc, char** argv, Method method) {
  const char* program = method == Method::sgd ? "ata-sgd" : "ata-prox";
  return apps::run_reporting_errors(program, [&] {
    const auto command_line = parse_training_options(argc, argv, method);
    if (command_line.help) {
      std::fputs(command_line.help->c_str(), stdout);
      return 0;
    }
    return run(command_line.options, method, program, train, nullptr);
  });
}

int run_training(const TrainingOptions& options, Method method, const char* program,
                 const Trainer& trainer, const char* worker_kind) {
  return run(options, method, program, trainer, worker_kind);
}

}  // namespace ata::ml

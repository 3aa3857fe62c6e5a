#include "training_app.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>

#include "app_support.hpp"
#include "ata/core/error.hpp"
#include "dataset.hpp"

namespace ata::ml {

namespace {

struct Options {
  std::string problem = "logistic";
  std::string data_path;
  std::size_t rows = 2000;
  std::size_t cols = 20;
  double l2 = 1e-3;
  std::size_t dim = 100;
  double noise = 1e-3;
  std::string scenario = "cifar";
  std::size_t workers = 51;
  double unit_us = 2.0;
  bool burn = false;
  std::size_t batch = 23;
  std::size_t rounds = 2000;
  double step = 0.05;
  double target_gap = 0.01;
  std::uint64_t seed = 1;
  std::vector<std::string> strategies{"gta", "ofta", "uta", "pull", "ata", "ata-e", "ata-auto"};
  double alpha = 0.0;
  double eta = 1.0;
  std::string json_path;
  std::string csv_path;
  std::string plot_dir;
};

std::unique_ptr<Problem> make_problem(const Options& o, Method method) {
  if (o.problem == "quadratic") {
    if (method == Method::prox) throw InvalidArgument("--problem quadratic has no prox; use logistic or least-squares");
    if (!o.data_path.empty()) throw InvalidArgument("--data does not apply to --problem quadratic");
    return std::make_unique<QuadraticProblem>(o.dim, o.noise);
  }
  if (o.problem != "logistic" && o.problem != "least-squares") {
    throw InvalidArgument("unknown problem '" + o.problem + "'; expected logistic, least-squares or quadratic");
  }
  const bool classify = o.problem == "logistic";
  Dataset data;
  std::string name;
  if (o.data_path.empty()) {
    data = classify ? make_classification(o.rows, o.cols, o.seed) : make_regression(o.rows, o.cols, o.seed);
    name = "synthetic data (seed " + std::to_string(o.seed) + ")";
  } else {
    data = load_libsvm(o.data_path);
    if (classify) as_plus_minus_one(data, o.data_path);
    scale_columns(data);
    name = o.data_path;
  }
  if (classify) return std::make_unique<LogisticProblem>(std::move(data), o.l2, name);
  return std::make_unique<LeastSquaresProblem>(std::move(data), name);
}

std::vector<std::string> with_yardsticks(std::vector<std::string> names) {
  std::vector<std::string> out;
  for (auto& s : names) {
    const auto known = policy_names();
    if (std::find(known.begin(), known.end(), s) == known.end()) (void)make_policy(s, 1);  // throws, listing names
    if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  }
  for (const char* y : {"ofta", "gta"}) {
    if (std::find(out.begin(), out.end(), y) == out.end()) out.emplace_back(y);
  }
  return out;
}

const TrainingRun& find(const std::vector<TrainingRun>& runs, const std::string& name) {
  return *std::find_if(runs.begin(), runs.end(), [&](const TrainingRun& r) { return r.name == name; });
}

std::string ratio(double a, double b) { return b > 0.0 ? apps::fixed(a / b, 2) : "-"; }

int run(const Options& o, Method method, const char* program) {
  const auto problem = make_problem(o, method);
  TrainingConfig config;
  config.method = method;
  config.scenario =
      apps::scenario_from_flag(o.scenario, o.workers, std::max<std::size_t>(1, o.rounds / 2));
  if (!(o.unit_us > 0.0)) throw InvalidArgument("--unit-us must be > 0");
  config.unit = std::chrono::nanoseconds(static_cast<long long>(o.unit_us * 1000.0));
  config.burn = o.burn;
  config.batch = o.batch;
  config.max_rounds = o.rounds;
  config.step = o.step;
  config.target_gap = o.target_gap;
  config.seed = o.seed;
  const auto means = true_means_seconds(config);
  config.policy.alpha = o.alpha > 0.0 ? o.alpha * 1e-6 : *std::max_element(means.begin(), means.end());
  config.policy.eta = o.eta;
  const auto names = with_yardsticks(o.strategies);

  const double initial_gap = problem->loss(problem->initial_point()) - problem->optimal_loss();
  std::printf("%s: %s\n", program, problem->describe().c_str());
  std::printf("  %s, f* = %.6g, target: f - f* <= %.3g (%g of the initial gap)\n",
              method == Method::sgd ? "minibatch SGD" : "minibatch stochastic proximal point",
              problem->optimal_loss(), o.target_gap * initial_gap, o.target_gap);
  std::printf("  workers: %zu threads, scenario %s, 1 model unit = %g us of %s; B = %zu, step %g, at most %zu rounds, seed %llu\n",
              config.scenario.workers(), config.scenario.name().c_str(), o.unit_us, o.burn ? "busy spinning" : "sleep",
              config.batch, config.step, config.max_rounds, static_cast<unsigned long long>(o.seed));

  std::vector<TrainingRun> runs;
  {
    apps::Progress progress(program);
    for (std::size_t s = 0; s < names.size(); ++s) {
      runs.push_back(train(*problem, config, names[s], [&](std::size_t k) {
        const double share = static_cast<double>(k) / static_cast<double>(config.max_rounds);
        progress.update((static_cast<double>(s) + share) / static_cast<double>(names.size()),
                        names[s] + " round " + std::to_string(k));
      }));
    }
  }

  const auto& gta = find(runs, "gta");
  const auto& ofta = find(runs, "ofta");
  apps::Table table({"strategy", "rounds", "time (s)", "worker time (s)", "time/GTA", "work/GTA", "time/OFTA",
                     "work/OFTA", "final f-f*", "overhead"});
  for (const auto& r : runs) {
    table.add_row({r.name, r.reached ? std::to_string(r.rounds) : std::to_string(r.rounds) + " (not reached)",
                   apps::fixed(r.wall_seconds, 3), apps::fixed(r.worker_seconds, 3), ratio(r.wall_seconds, gta.wall_seconds),
                   ratio(r.worker_seconds, gta.worker_seconds), ratio(r.wall_seconds, ofta.wall_seconds),
                   ratio(r.worker_seconds, ofta.worker_seconds), apps::general(r.final_gap, 3),
                   apps::fixed(100.0 * r.overhead_share, 1) + "%"});
  }
  std::printf("\nTime and worker time to reach the target (real seconds on this machine):\n%s", table.render().c_str());

  if (!o.json_path.empty()) {
    nlohmann::json strategies = nlohmann::json::array();
    for (const auto& r : runs) {
      strategies.push_back({{"name", r.name}, {"reached_target", r.reached}, {"rounds", r.rounds},
                            {"wall_time", r.wall_seconds}, {"worker_time", r.worker_seconds},
                            {"wall_time_vs_gta", r.wall_seconds / gta.wall_seconds},
                            {"worker_time_vs_gta", r.worker_seconds / gta.worker_seconds},
                            {"wall_time_vs_ofta", r.wall_seconds / ofta.wall_seconds},
                            {"worker_time_vs_ofta", r.worker_seconds / ofta.worker_seconds},
                            {"final_loss", r.final_gap + problem->optimal_loss()}, {"final_gap", r.final_gap},
                            {"overhead_share", r.overhead_share}});
    }
    const nlohmann::json summary{{"problem", problem->describe()}, {"method", method == Method::sgd ? "sgd" : "prox"},
                                 {"scenario", config.scenario.name()}, {"workers", config.scenario.workers()},
                                 {"batch", config.batch}, {"max_rounds", config.max_rounds}, {"seed", o.seed},
                                 {"unit_us", o.unit_us}, {"step", config.step}, {"optimal_loss", problem->optimal_loss()},
                                 {"target_gap", o.target_gap * initial_gap}, {"strategies", strategies}};
    apps::write_file(o.json_path, summary.dump(2) + "\n");
    std::printf("wrote %s\n", o.json_path.c_str());
  }
  if (!o.csv_path.empty()) {
    std::ostringstream csv;
    csv.precision(12);
    csv << "strategy,round,wall_time,worker_time,gap\n";
    for (const auto& r : runs) {
      for (const auto& p : r.trace) csv << r.name << ',' << p.round << ',' << p.wall_seconds << ',' << p.worker_seconds << ',' << p.gap << '\n';
    }
    apps::write_file(o.csv_path, csv.str());
    std::printf("wrote %s\n", o.csv_path.c_str());
  }
  if (!o.plot_dir.empty()) {
    const std::string where = config.scenario.name() + ", n = " + std::to_string(config.scenario.workers()) +
                              ", B = " + std::to_string(config.batch);
    std::vector<apps::Figure> figures;
    for (const bool by_work : {false, true}) {
      apps::Figure f{by_work ? "loss_vs_worker_time.png" : "loss_vs_wall_time.png",
                     std::string(by_work ? "Loss vs total worker time" : "Loss vs wall time") + " (" + where + ")",
                     by_work ? "total worker time (s)" : "wall time (s)", "f(x) - f*", false, true, {}};
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
    for (const auto& file : apps::plot_figures(o.plot_dir, figures)) std::printf("wrote %s\n", file.c_str());
  }
  return 0;
}

}  // namespace

int training_main(int argc, char** argv, Method method) {
  const char* program = method == Method::sgd ? "ata-sgd" : "ata-prox";
  Options o;
  CLI::App app{method == Method::sgd
                   ? "ata-sgd: minibatch SGD on real threads with heterogeneous workers, strategy by strategy"
                   : "ata-prox: minibatch stochastic proximal point on real threads, strategy by strategy"};
  app.option_defaults()->always_capture_default();
  app.add_option("--problem", o.problem, method == Method::sgd ? "logistic, least-squares or quadratic (the paper's)"
                                                               : "logistic or least-squares");
  app.add_option("--data", o.data_path, "LIBSVM file for logistic / least-squares (default: synthetic data)");
  app.add_option("--rows", o.rows, "synthetic data: samples")->check(apps::kWholeAtLeastOne);
  app.add_option("--cols", o.cols, "synthetic data: features")->check(apps::kWholeAtLeastOne);
  app.add_option("--l2", o.l2, "logistic: L2 regularisation")->check(apps::kPositiveNumber);
  app.add_option("--dim", o.dim, "quadratic: dimension")->check(apps::kWholeAtLeastOne);
  app.add_option("--noise", o.noise, "quadratic: gradient noise")->check(apps::kNonNegativeNumber);
  app.add_option("--scenario", o.scenario, "simulator preset or JSON scenario file: the workers' slowdowns");
  app.add_option("--workers", o.workers, "threads (workers) for a preset")->check(apps::kWholeAtLeastOne);
  app.add_option("--unit-us", o.unit_us, "microseconds per model unit of delay")->check(apps::kPositiveNumber);
  app.add_flag("--burn", o.burn, "spin on the CPU instead of sleeping the delays");
  app.add_option("--batch", o.batch, "tasks per round B")->check(apps::kWholeAtLeastOne);
  app.add_option("--rounds", o.rounds, "rounds at most, per strategy")->check(apps::kWholeAtLeastOne);
  app.add_option("--step", o.step, "step size")->check(apps::kPositiveNumber);
  app.add_option("--target-gap", o.target_gap, "stop at f - f* <= this share of the initial gap")->check(apps::kPositiveNumber);
  app.add_option("--seed", o.seed, "random seed")->check(apps::kWholeNonNegative);
  app.add_option("--strategies", o.strategies, "comma list of gta, ofta, uta, ata, ata-e, ata-auto, pull")->delimiter(',');
  app.add_option("--alpha", o.alpha, "ATA's alpha in microseconds (default: the largest mean task time)")
      ->check(apps::kPositiveNumber);
  app.add_option("--eta", o.eta, "ATA-Empirical's eta")->check(apps::kPositiveNumber);
  app.add_option("--json", o.json_path, "write the summary as JSON");
  app.add_option("--csv", o.csv_path, "write the per-round trace as CSV");
  app.add_option("--plot", o.plot_dir, "write PNG plots into this folder");
  if (const auto exit_code = apps::parse_command_line(app, argc, argv, program)) return *exit_code;
  if (o.target_gap >= 1.0) {
    std::cerr << program << ": error: --target-gap must be < 1, got " << o.target_gap << "\n";
    return 2;
  }
  return apps::run_reporting_errors(program, [&] { return run(o, method, program); });
}

}  // namespace ata::ml

#include "training_options.hpp"

#include "core/checks.hpp"

namespace ata::ml {

apps::CommandLine<TrainingOptions> parse_training_options(int argc, const char* const* argv,
                                                          Method method) {
  apps::CommandLine<TrainingOptions> command_line;
  TrainingOptions& o = command_line.options;
  const bool sgd = method == Method::sgd;
  CLI::App app{
      sgd ? "ata-sgd: minibatch SGD on real threads with heterogeneous workers, strategy by "
            "strategy"
          : "ata-prox: minibatch stochastic proximal point on real threads, strategy by strategy"};
  app.option_defaults()->always_capture_default();
  const std::string problems =
      sgd ? "logistic, least-squares or quadratic" : "logistic or least-squares";
  app.add_option(
         "--problem", o.problem,
         sgd ? "logistic, least-squares or quadratic (the paper's)" : "logistic or least-squares")
      ->check(CLI::Validator(
          [=](std::string& text) -> std::string {
            if (text == "logistic" || text == "least-squares" || (sgd && text == "quadratic")) {
              return {};
            }
            if (text == "quadratic") return "quadratic has no prox; expected " + problems;
            return "unknown problem '" + ata::detail::excerpt(text) + "'; expected " + problems;
          },
          "PROBLEM"));
  app.add_option("--data", o.data_path,
                 "LIBSVM file for logistic / least-squares (default: synthetic data)")
      ->check(apps::kNonEmpty);
  app.add_option("--rows", o.rows, "synthetic data: samples")
      ->transform(apps::whole_number(1, kMaxTrainingSize));
  app.add_option("--cols", o.cols, "synthetic data: features")
      ->transform(apps::whole_number(1, kMaxTrainingSize));
  app.add_option("--l2", o.l2, "logistic: L2 regularisation")->check(apps::kPositiveNumber);
  app.add_option("--dim", o.dim, "quadratic: dimension")
      ->transform(apps::whole_number(1, kMaxTrainingSize));
  app.add_option("--noise", o.noise, "quadratic: gradient noise")->check(apps::kNonNegativeNumber);
  app.add_option("--scenario", o.scenario,
                 "simulator preset or JSON scenario file: the workers' slowdowns")
      ->check(apps::kNonEmpty);
  app.add_option("--workers", o.workers, "threads (workers) for a preset (default 51)")
      ->transform(apps::whole_number(1, kMaxTrainingWorkers));
  app.add_option("--unit-us", o.unit_us, "microseconds per model unit of delay")
      ->check(apps::number_in(kMinUnitUs, true, kMaxUnitUs, true));
  app.add_flag("--burn", o.burn, "spin on the CPU instead of sleeping the delays");
  app.add_option("--batch", o.batch, "tasks per round B")
      ->transform(apps::whole_number(1, kMaxTrainingBatch));
  app.add_option("--rounds", o.rounds, "rounds at most, per strategy")
      ->transform(apps::whole_number(1, kMaxTrainingRounds));
  app.add_option("--step", o.step, "step size")->check(apps::kPositiveNumber);
  app.add_option("--target-gap", o.target_gap, "stop at f - f* <= this share of the initial gap")
      ->check(apps::number_in(0.0, false, 1.0, false));
  app.add_option("--seed", o.seed, "random seed")->transform(apps::whole_number(0));
  std::string strategies;
  for (const auto& s : o.strategies) strategies += (strategies.empty() ? "" : ",") + s;
  app.add_option("--strategies", strategies,
                 "comma list of gta, ofta, uta, ata, ata-e, ata-auto, pull")
      ->check(apps::strategy_list());
  app.add_option("--alpha", o.alpha,
                 "ATA's alpha in microseconds (default: the largest mean task time)")
      ->check(apps::kPositiveNumber);
  app.add_option("--eta", o.eta, "ATA-Empirical's eta")->check(apps::kPositiveNumber);
  app.add_option("--json", o.json_path, "write the summary as JSON")->check(apps::kNonEmpty);
  app.add_option("--csv", o.csv_path, "write the per-round trace as CSV")->check(apps::kNonEmpty);
  app.add_option("--plot", o.plot_dir, "write PNG plots into this folder")->check(apps::kNonEmpty);
  app.add_option("--backups", o.backups,
                 "backup tasks for allocated strategies: on (an idle worker takes over unstarted "
                 "tasks, then copies overdue ones), copies (backup copies only), off")
      ->check(CLI::IsMember({"on", "copies", "off"}));
  command_line.help = apps::parse_arguments(app, argc, argv);
  o.strategies = apps::strategies_with_yardsticks(strategies);
  if (o.problem == "quadratic" && !o.data_path.empty()) {
    throw apps::UsageError("--data does not apply to --problem quadratic");
  }
  return command_line;
}

}  // namespace ata::ml

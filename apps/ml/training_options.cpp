#include "training_options.hpp"

#include <algorithm>
#include <utility>

#include "ata/core/ringmaster_workers.hpp"
#include "core/checks.hpp"

namespace ata::ml {

namespace {

bool is_preset(const std::string& name) {
  const auto presets = models::preset_names();
  return std::find(presets.begin(), presets.end(), name) != presets.end();
}

}  // namespace

// Here, not with the lanes: the command line (and its fuzzer) needs the names alone.
const char* lane_kind_name(LaneKind kind) noexcept {
  switch (kind) {
    case LaneKind::threads:
      return "threads";
    case LaneKind::asio:
      return "asio";
    case LaneKind::tbb:
      return "tbb";
  }
  return "threads";
}

apps::CommandLine<TrainingOptions> parse_training_options(int argc, const char* const* argv,
                                                          Method method,
                                                          std::string_view description) {
  apps::CommandLine<TrainingOptions> command_line;
  TrainingOptions& o = command_line.options;
  const bool sgd = method == Method::sgd;
  CLI::App app{
      !description.empty() ? std::string(description)
      : sgd ? "ata-sgd: minibatch SGD on real threads with heterogeneous workers, strategy by "
              "strategy"
            : "ata-prox: minibatch stochastic proximal point on real threads, strategy by "
              "strategy"};
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
                 "simulator preset or JSON scenario file: the workers' slowdowns; none: no "
                 "simulated delay (the default with --cpus or --work-factors)")
      ->check(apps::kNonEmpty);
  app.add_option(
         "--workers", o.workers,
         "workers of a preset or of none (default 51, or one per --cpus or --work-factors value)")
      ->transform(apps::whole_number(1, kMaxTrainingWorkers));
  app.add_option("--unit-us", o.unit_us, "microseconds per model unit of delay")
      ->check(apps::number_in(kMinUnitUs, true, kMaxUnitUs, true));
  app.add_flag("--burn", o.burn, "spin on the CPU instead of sleeping the delays");
  std::string lanes = lane_kind_name(o.lanes);
  app.add_option("--lanes", lanes,
                 "where the workers run: threads (a thread each), asio (an io_context each, run "
                 "by its own thread) or tbb (a oneTBB arena each)")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            if (text == "threads" || text == "asio" || text == "tbb") return {};
            return "unknown lane kind '" + ata::detail::excerpt(text) +
                   "'; expected threads, asio or tbb";
          },
          "KIND"));
  std::string cpus;
  app.add_option("--cpus", cpus,
                 "comma list: worker i runs on CPU LIST[i] only (e.g. 0,0,0,1: three workers "
                 "share CPU 0, one has CPU 1); OFTA's means are then measured")
      ->transform(apps::cpu_list(kMaxTrainingWorkers));
  std::string work_factors;
  app.add_option("--work-factors", work_factors,
                 "comma list: worker i runs each task LIST[i] times (1 to " +
                     std::to_string(kMaxWorkFactor) +
                     "); needs --scenario none; OFTA's means are then measured")
      ->transform(apps::number_list(apps::whole_number(1, kMaxWorkFactor), kMaxTrainingWorkers));
  app.add_option("--calibration-tasks", o.calibration_tasks,
                 "tasks per worker of the pass measuring OFTA's means (default " +
                     std::to_string(kDefaultCalibrationTasks) +
                     ", when the speeds come from the machine: --scenario none or --cpus)")
      ->transform(apps::whole_number(1, kMaxCalibrationTasks));
  app.add_option("--batch", o.batch, "tasks per round B")
      ->transform(apps::whole_number(1, kMaxTrainingBatch));
  app.add_option("--rounds", o.rounds, "rounds at most, per strategy")
      ->transform(apps::whole_number(1, kMaxTrainingRounds));
  app.add_option("--change-round", o.change_round,
                 "round at which the 'slowdown' scenario slows worker 0 ten times (default: half "
                 "of --rounds; a stream counts B gradients a round)")
      ->transform(apps::whole_number(1, kMaxTrainingRounds));
  app.add_option("--step", o.step, "step size")->check(apps::kPositiveNumber);
  app.add_option("--target-gap", o.target_gap, "stop at f - f* <= this share of the initial gap")
      ->check(apps::number_in(0.0, false, 1.0, false));
  app.add_option("--seed", o.seed, "random seed")->transform(apps::whole_number(0));
  std::string strategies;
  for (const auto& s : o.strategies) strategies += (strategies.empty() ? "" : ",") + s;
  app.add_option("--strategies", strategies,
                 "comma list of gta, ofta, uta, ata, ata-e, ata-auto, pull, race:M (a race of "
                 "the M fastest workers), race:M@F (the same, each copy restarted past F x its "
                 "mean); the asynchronous streams ringmaster (every worker), "
                 "ringmaster-ata (learned selection), ringmaster-oracle (selection from the "
                 "scenario's means), with --delay-threshold (docs/async.md)")
      ->check(apps::strategy_list(std::vector<std::string>(stream_strategy_names().begin(),
                                                           stream_strategy_names().end())));
  app.add_option("--alpha", o.alpha,
                 "ATA's alpha in microseconds (default: the largest mean task time)")
      ->check(apps::kPositiveNumber);
  app.add_option("--eta", o.eta, "ATA-Empirical's eta")->check(apps::kPositiveNumber);
  app.add_option("--json", o.json_path, "write the summary as JSON")->check(apps::kNonEmpty);
  app.add_option("--csv", o.csv_path, "write the per-round trace as CSV")->check(apps::kNonEmpty);
  app.add_option("--plot", o.plot_dir, "write PNG plots into this folder")->check(apps::kNonEmpty);
  app.add_option("--trace", o.trace_path,
                 "write a Chrome-trace / Perfetto JSON timeline of the first and last "
                 "--trace-rounds rounds of each strategy to this file (docs/timelines.md)")
      ->check(apps::kNonEmpty);
  app.add_option("--trace-rounds", o.trace_rounds,
                 "rounds traced at each end of a strategy's run (the first N and the last N)")
      ->transform(apps::whole_number(1, kMaxTrainingTraceRounds));
  app.add_option("--backups", o.backups,
                 "backup tasks for allocated strategies: on (an idle worker takes over unstarted "
                 "tasks, then copies overdue ones), copies (backup copies only), off")
      ->check(apps::kBackupMode);
  app.add_option("--work-price", o.work_price,
                 "price p of a worker-second in wall-seconds: the objective column is wall + p x "
                 "worker time (0: wall time only; default 1/n, so the whole cluster busy for a "
                 "second costs as much as a second of waiting)")
      ->check(apps::kNonNegativeNumber);
  app.add_option("--ata-auto-race", o.ata_auto_race, apps::kAtaAutoRaceHelp)
      ->check(apps::kAtaAutoRace);
  app.add_option("--delay-threshold", o.delay_threshold,
                 "Ringmaster's R: a stream's result of delay >= R is not applied (required by "
                 "the ringmaster strategies)")
      ->transform(apps::whole_number(1, kMaxTrainingDelayThreshold));
  app.add_option("--stops", o.stops,
                 "on: a stream task whose delay reaches R is stopped and its worker restarted "
                 "(the authors' code); off: it finishes and is discarded")
      ->check(CLI::IsMember({"on", "off"}));
  app.add_option("--stream-step", o.stream_step,
                 "step of each result a stream applies (default --step)")
      ->check(apps::kPositiveNumber);
  app.add_option("--stream-gradients", o.stream_gradients,
                 "most results a stream strategy applies (default --rounds x --batch)")
      ->transform(apps::whole_number(1, kMaxTrainingStreamGradients));
  command_line.help = apps::parse_arguments(app, argc, argv);
  if (command_line.help) return command_line;  // flags that do not go together do not matter
  o.strategies = apps::strategies_with_yardsticks(strategies);
  const bool streams =
      std::any_of(o.strategies.begin(), o.strategies.end(),
                  [](const std::string& s) { return stream_selection(s).has_value(); });
  if (streams && o.delay_threshold == 0) {
    throw apps::UsageError(
        "--delay-threshold: required by the ringmaster strategies (Ringmaster's R), got ''");
  }
  if (!streams) {
    for (const char* flag :
         {"--delay-threshold", "--stops", "--stream-step", "--stream-gradients"}) {
      if (app.count(flag) > 0) {
        throw apps::UsageError(
            std::string(flag) +
            ": applies to the ringmaster strategies only; none is in --strategies");
      }
    }
  }
  o.lanes = lanes == "asio" ? LaneKind::asio : lanes == "tbb" ? LaneKind::tbb : LaneKind::threads;
  for (const auto cpu : apps::numbers_of(cpus)) o.cpus.push_back(static_cast<unsigned>(cpu));
  for (const auto factor : apps::numbers_of(work_factors)) o.work_factors.push_back(factor);
  const bool scenario_given = app.count("--scenario") > 0;
  if (!scenario_given && (!o.cpus.empty() || !o.work_factors.empty())) o.scenario = kNoScenario;
  const bool delays = o.scenario != kNoScenario;
  if (!o.work_factors.empty() && delays) {
    throw apps::UsageError("--work-factors: needs --scenario none, not " +
                           ata::detail::excerpt(o.scenario) +
                           " (a worker is slowed by simulated delays or by repeated work)");
  }
  if (!delays && o.burn) throw apps::UsageError("--burn: --scenario none has no delays to burn");
  if (!delays && app.count("--unit-us") > 0) {
    throw apps::UsageError("--unit-us: --scenario none has no delays to scale");
  }
  // One value per worker. Without --workers, a list sets the count of a preset or of none; a
  // file's own count is compared when it is read.
  for (const auto& [flag, length] :
       {std::pair{"--cpus", o.cpus.size()}, std::pair{"--work-factors", o.work_factors.size()}}) {
    if (length == 0) continue;
    if (o.workers == 0 && (!delays || is_preset(o.scenario))) o.workers = length;
    if (o.workers != 0 && length != o.workers) {
      throw apps::UsageError(std::string(flag) + ": " + std::to_string(length) + " values for " +
                             std::to_string(o.workers) + " workers; give one per worker");
    }
  }
  if (o.problem == "quadratic" && !o.data_path.empty()) {
    throw apps::UsageError("--data does not apply to --problem quadratic");
  }
  return command_line;
}

}  // namespace ata::ml

#include "sim_options.hpp"

#include <algorithm>

#include "ata/models/scenario.hpp"
#include "ata/sim/ringmaster_stream.hpp"

namespace ata::apps {

namespace {

// Strategies beyond make_policy()'s: the yardsticks the simulator computes, and the streams.
std::vector<std::string> extra_strategies() {
  std::vector<std::string> extra{"eofta", "frontier"};
  for (const auto name : sim::stream_strategy_names()) extra.emplace_back(name);
  return extra;
}

}  // namespace

CommandLine<SimOptions> parse_sim_options(int argc, const char* const* argv) {
  CommandLine<SimOptions> command_line;
  SimOptions& o = command_line.options;
  CLI::App app{
      "ata-sim: compare task allocation strategies on a simulated cluster, in virtual time"};
  app.option_defaults()->always_capture_default();
  std::string presets;
  for (const auto p : models::preset_names()) {
    presets += (presets.empty() ? "" : ", ") + std::string(p);
  }
  app.add_option("--scenario", o.scenario, "preset (" + presets + ") or a JSON scenario file")
      ->check(kNonEmpty);
  app.add_option("--workers", o.workers, "number of workers n for a preset (default 51)")
      ->transform(whole_number(1, models::Scenario::kMaxWorkers));
  app.add_option("--batch", o.batch, "tasks per round B")->transform(whole_number(1, kMaxSimBatch));
  app.add_option("--rounds", o.rounds, "rounds K")->transform(whole_number(1, kMaxSimRounds));
  app.add_option("--seed", o.seed,
                 "random seed of the workers' times and of ata-auto's draws: the same seed "
                 "reproduces a run bit for bit")
      ->transform(whole_number(0));
  std::string strategies;
  for (const auto& s : o.strategies) strategies += (strategies.empty() ? "" : ",") + s;
  app.add_option(
         "--strategies", strategies,
         "comma list of gta, ofta, eofta (the allocation of least expected round time), "
         "uta, ata, ata-e, ata-auto (no alpha or eta), pull, race:M (a race of the M "
         "fastest workers), race:M@F (the same, each copy restarted past F x its mean), frontier "
         "(the best fixed plan, chosen by probe runs on the true "
         "laws); ofta, eofta, frontier and gta always run (eofta and frontier only where "
         "they fit: else a note says so); the asynchronous streams ringmaster (every worker), "
         "ringmaster-ata (learned selection), ringmaster-oracle (selection from the true "
         "laws), with --delay-threshold (docs/async.md)")
      ->check(strategy_list(extra_strategies()));
  app.add_option("--alpha", o.alpha,
                 "ATA's bound on the sub-exponential norms (default: max_i mu_i)")
      ->check(kPositiveNumber);
  app.add_option("--eta", o.eta, "ATA-Empirical's eta")->check(kPositiveNumber);
  app.add_option("--change-round", o.change_round,
                 "round at which 'slowdown' slows worker 0 (default K/2)")
      ->transform(whole_number(1, kMaxSimRounds));
  app.add_option("--backups", o.backups,
                 "backup tasks for allocated strategies: on (an idle worker takes over unstarted "
                 "tasks, then copies overdue ones), copies (backup copies only), off")
      ->check(ata::apps::kBackupMode);
  app.add_option("--backup-threshold", o.backup_threshold,
                 "a running task is overdue after this multiple of its worker's learned mean")
      ->check(number_in(1.0, false));
  app.add_option("--backup-copies", o.backup_copies,
                 "most copies of one task at once, the original included (1: take-overs only)")
      ->transform(whole_number(1, 16));
  app.add_option("--ata-auto-race", o.ata_auto_race, ata::apps::kAtaAutoRaceHelp)
      ->check(ata::apps::kAtaAutoRace);
  app.add_option("--work-price", o.work_price,
                 "price p of a worker-second in wall-seconds: the objective column is wall + p x "
                 "worker time (0: wall time only; default 1/n, so the whole cluster busy for a "
                 "second costs as much as a second of waiting)")
      ->check(kNonNegativeNumber);
  app.add_option("--frontier-probe-rounds", o.frontier_probe_rounds,
                 "rounds of each probe run of the frontier yardstick (min with --rounds)")
      ->transform(whole_number(1, kMaxSimRounds));
  app.add_flag("--sgd", o.sgd, "run SGD on the paper's quadratic alongside");
  app.add_option("--dim", o.dim, "SGD dimension d")->transform(whole_number(1, kMaxSimDim));
  app.add_option("--step", o.step, "SGD step size (below 2: larger steps diverge)")
      ->check(number_in(0.0, false, kMaxSimStep, false));
  app.add_option("--noise", o.noise, "SGD gradient noise standard deviation")
      ->check(kNonNegativeNumber);
  app.add_option("--target", o.target,
                 "time every strategy to f(x) - f* <= target (with --sgd); the stream strategies "
                 "end there")
      ->check(kPositiveNumber);
  app.add_option("--delay-threshold", o.delay_threshold,
                 "Ringmaster's R: a gradient of delay >= R is not applied (required by the "
                 "ringmaster strategies)")
      ->transform(whole_number(1, kMaxSimDelayThreshold));
  app.add_option("--stops", o.stops,
                 "on: a stream task whose delay reaches R is stopped and restarted (the authors' "
                 "code); off: it finishes and is discarded")
      ->check(CLI::IsMember({"on", "off"}));
  app.add_option("--stream-step", o.stream_step,
                 "SGD step of each gradient a stream applies (default --step)")
      ->check(number_in(0.0, false, kMaxSimStep, false));
  app.add_option("--stream-gradients", o.stream_gradients,
                 "most gradients a stream strategy applies (default --rounds x --batch)")
      ->transform(whole_number(1, kMaxSimStreamGradients));
  app.add_option("--json", o.json_path, "write the summary as JSON to this file")->check(kNonEmpty);
  app.add_option("--csv", o.csv_path, "write the per-round trace as CSV to this file")
      ->check(kNonEmpty);
  app.add_option("--plot", o.plot_dir, "write PNG plots into this folder")->check(kNonEmpty);
  app.add_option("--trace", o.trace_path,
                 "write a Chrome-trace / Perfetto JSON timeline of the first and last "
                 "--trace-rounds rounds of each strategy to this file (docs/timelines.md)")
      ->check(kNonEmpty);
  app.add_option("--trace-rounds", o.trace_rounds,
                 "rounds traced at each end of a strategy's run (the first N and the last N)")
      ->transform(whole_number(1, kMaxSimTraceRounds));
  app.add_option("--trace-unit-us", o.trace_unit_us,
                 "microseconds one model time unit lasts in the trace (default 1: a unit "
                 "shows as a microsecond)")
      ->check(number_in(0.0, false, 1e9, true));
  app.add_option("--gantt-strategy", o.gantt_strategy,
                 "the strategy gantt.png draws (default: the first that is not a yardstick)")
      ->check(kNonEmpty);
  command_line.help = parse_arguments(app, argc, argv);
  o.strategies = strategies_with_yardsticks(strategies, {"ofta", "eofta", "frontier", "gta"});
  if (command_line.help) return command_line;
  if (o.target && !o.sgd)
    throw UsageError("--target: needs --sgd, got '" + general(*o.target, 6) + "'");
  const bool streams =
      std::any_of(o.strategies.begin(), o.strategies.end(),
                  [](const std::string& s) { return sim::stream_selection(s).has_value(); });
  if (streams && o.delay_threshold == 0) {
    throw UsageError(
        "--delay-threshold: required by the ringmaster strategies (Ringmaster's R; "
        "its theory takes ceil(sigma^2 / epsilon)), got ''");
  }
  return command_line;
}

double estimated_draws(const SimOptions& options, std::size_t workers) {
  const double dim = options.sgd ? static_cast<double>(options.dim) : 0.0;
  const double per_round = static_cast<double>(options.batch) + static_cast<double>(workers) + dim;
  const double gradients =
      options.stream_gradients > 0
          ? static_cast<double>(options.stream_gradients)
          : static_cast<double>(options.rounds) * static_cast<double>(options.batch);
  double draws = 0.0;
  for (const auto& s : options.strategies) {
    draws += sim::stream_selection(s) ? gradients * (static_cast<double>(workers) + dim)
                                      : static_cast<double>(options.rounds) * per_round;
  }
  return draws;
}

}  // namespace ata::apps

#include "training_options.hpp"

#include <algorithm>
#include <charconv>
#include <functional>
#include <utility>

#include "core/checks.hpp"

#ifdef __linux__
#include <sched.h>
#endif

namespace ata::ml {

namespace {

// The highest CPU number Linux's affinity masks hold (CPU_SETSIZE - 1).
constexpr std::uint64_t kHighestCpu = 1023;

// "0-3,6": the CPUs this process may use, as ranges.
std::string usable_cpus_text(const std::vector<unsigned>& cpus) {
  std::string out;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    out += (out.empty() ? "" : ",") + std::to_string(cpus[i]);
    if (j > i) out += "-" + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

std::vector<unsigned> usable_cpus() {
  std::vector<unsigned> out;
#ifdef __linux__
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) == 0) {
    for (unsigned c = 0; c <= kHighestCpu && c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &allowed)) out.push_back(c);
    }
  }
#endif
  return out;
}

// A comma list of whole numbers, one per worker, each checked by `item` and then by `also`
// (which returns an error or nothing).
CLI::Validator number_list(const CLI::Validator& item,
                           std::function<std::string(std::uint64_t)> also = {}) {
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        const auto items = apps::split_list(text);
        if (items.size() > kMaxTrainingWorkers) {
          return "more than " + std::to_string(kMaxTrainingWorkers) + " values (one per worker)";
        }
        std::string canonical;
        for (std::size_t k = 0; k < items.size(); ++k) {
          std::string value = items[k];
          if (value.empty()) return "empty item in '" + ata::detail::excerpt(text) + "'";
          if (auto error = item(value); !error.empty()) {
            return "item " + std::to_string(k + 1) + " " + error;
          }
          if (also) {
            std::uint64_t number = 0;
            std::from_chars(value.data(), value.data() + value.size(), number);
            if (auto error = also(number); !error.empty()) return error;
          }
          canonical += (canonical.empty() ? "" : ",") + value;
        }
        text = canonical;
        return {};
      },
      "LIST");
}

template <class T>
std::vector<T> numbers_of(const std::string& list) {
  std::vector<T> out;
  if (list.empty()) return out;
  for (const auto& item : apps::split_list(list)) {
    T value{};
    std::from_chars(item.data(), item.data() + item.size(), value);  // checked by number_list
    out.push_back(value);
  }
  return out;
}

bool is_preset(const std::string& name) {
  const auto presets = sim::preset_names();
  return std::find(presets.begin(), presets.end(), name) != presets.end();
}

}  // namespace

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
  const auto usable = usable_cpus();
  std::string cpus;
  app.add_option("--cpus", cpus,
                 "comma list: worker i runs on CPU LIST[i] only (e.g. 0,0,0,1: three workers "
                 "share CPU 0, one has CPU 1); OFTA's means are then measured")
      ->transform(number_list(apps::whole_number(0, kHighestCpu), [usable](std::uint64_t cpu) {
        if (std::find(usable.begin(), usable.end(), cpu) != usable.end()) return std::string();
        return "CPU " + std::to_string(cpu) + " is not one this process may use (" +
               (usable.empty() ? std::string("none") : usable_cpus_text(usable)) + ")";
      }));
  std::string work_factors;
  app.add_option("--work-factors", work_factors,
                 "comma list: worker i runs each task LIST[i] times (1 to " +
                     std::to_string(kMaxWorkFactor) +
                     "); needs --scenario none; OFTA's means are then measured")
      ->transform(number_list(apps::whole_number(1, kMaxWorkFactor)));
  app.add_option("--calibration-tasks", o.calibration_tasks,
                 "tasks per worker of the pass measuring OFTA's means (default " +
                     std::to_string(kDefaultCalibrationTasks) +
                     ", when the speeds come from the machine: --scenario none or --cpus)")
      ->transform(apps::whole_number(1, kMaxCalibrationTasks));
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
  if (command_line.help) return command_line;  // flags that do not go together do not matter
  o.strategies = apps::strategies_with_yardsticks(strategies);
  o.lanes = lanes == "asio" ? LaneKind::asio : lanes == "tbb" ? LaneKind::tbb : LaneKind::threads;
  o.cpus = numbers_of<unsigned>(cpus);
  o.work_factors = numbers_of<std::size_t>(work_factors);
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

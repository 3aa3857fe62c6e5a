// Fuzz target: the command-line parser of ata-sgd and ata-prox (ata::ml::parse_training_options),
// each input parsed as both.
//
// Input: the arguments after the program name, separated by NUL bytes (see command_line.hpp).
// A bad command line must give ata::InvalidArgument (the apps' UsageError); any other
// exception, a crash, undefined behaviour, printing anything or touching a file is a finding.
// A command line that parses must respect every flag's documented limit, name a problem the
// method has (no quadratic for ata-prox, no --data with it), and its strategies must be known
// names, each once, with the yardsticks OFTA and GTA among them; --cpus and --work-factors give
// one value in range per worker.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "ata/core/make_policy.hpp"
#include "command_line.hpp"
#include "fuzz_support.hpp"
#include "training_options.hpp"

namespace {

using ata::fuzz::check_limit;
using ata::fuzz::check_strategies;
using ata::fuzz::finding;

void check_positive(const char* flag, double value) {
  if (!(value > 0.0 && std::isfinite(value)))
    finding(std::string(flag) + " " + std::to_string(value));
}

void check(const std::vector<std::string>& arguments, ata::ml::Method method) {
  const bool sgd = method == ata::ml::Method::sgd;
  const auto parsed = ata::fuzz::parse_command_line(
      sgd ? "ata-sgd" : "ata-prox", arguments, [method](int argc, const char* const* argv) {
        return ata::ml::parse_training_options(argc, argv, method);
      });
  if (!parsed || parsed->help) {
    if (parsed && parsed->help->empty()) finding("empty --help text");
    return;
  }
  using namespace ata::ml;
  const TrainingOptions& o = parsed->options;
  if (o.problem != "logistic" && o.problem != "least-squares" &&
      !(sgd && o.problem == "quadratic")) {
    finding("--problem '" + o.problem + "' accepted");
  }
  if (o.problem == "quadratic" && !o.data_path.empty()) finding("--data with quadratic");
  if (o.scenario.empty()) finding("empty --scenario accepted");
  constexpr double kMaxSize = static_cast<double>(kMaxTrainingSize);
  check_limit("--rows", static_cast<double>(o.rows), 1, kMaxSize);
  check_limit("--cols", static_cast<double>(o.cols), 1, kMaxSize);
  check_limit("--dim", static_cast<double>(o.dim), 1, kMaxSize);
  check_limit("--workers", static_cast<double>(o.workers), 0,
              static_cast<double>(kMaxTrainingWorkers));
  check_limit("--batch", static_cast<double>(o.batch), 1, static_cast<double>(kMaxTrainingBatch));
  check_limit("--rounds", static_cast<double>(o.rounds), 1,
              static_cast<double>(kMaxTrainingRounds));
  check_limit("--unit-us", o.unit_us, kMinUnitUs, kMaxUnitUs);
  if (!(o.target_gap > 0.0 && o.target_gap < 1.0)) {
    finding("--target-gap " + std::to_string(o.target_gap));
  }
  check_positive("--l2", o.l2);
  check_positive("--step", o.step);
  check_positive("--eta", o.eta);
  check_limit("--alpha", o.alpha, 0.0, std::numeric_limits<double>::max());
  check_limit("--noise", o.noise, 0.0, std::numeric_limits<double>::max());
  check_strategies(o.strategies, {}, {"ofta", "gta"});
  // Lanes: one value per worker (a scenario file counts them later), in range; work factors
  // only without simulated delays.
  for (const auto length : {o.cpus.size(), o.work_factors.size()}) {
    if (length != 0 && o.workers != 0 && length != o.workers)
      finding("a list is not --workers long");
  }
  for (const auto cpu : o.cpus) check_limit("--cpus", static_cast<double>(cpu), 0, 1023);
  for (const auto factor : o.work_factors) {
    check_limit("--work-factors", static_cast<double>(factor), 1,
                static_cast<double>(kMaxWorkFactor));
  }
  if (!o.work_factors.empty() && o.scenario != kNoScenario) finding("work factors on delays");
  check_limit("--calibration-tasks", static_cast<double>(o.calibration_tasks), 0,
              static_cast<double>(kMaxCalibrationTasks));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto arguments =
      ata::fuzz::decode_arguments(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!arguments) return 0;
  check(*arguments, ata::ml::Method::sgd);
  check(*arguments, ata::ml::Method::prox);
  return 0;
}

// Fuzz target: ata-sim's command-line parser (ata::apps::parse_sim_options).
//
// Input: the arguments after the program name, separated by NUL bytes (see command_line.hpp).
// A bad command line must give ata::InvalidArgument (the app's UsageError); any other
// exception, a crash, undefined behaviour, printing anything or touching a file is a finding.
// A command line that parses must respect every flag's documented limit, and its strategies
// must be known names, each once, with the yardsticks OFTA, EOFTA and GTA among them.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "ata/core/make_policy.hpp"
#include "ata/models/scenario.hpp"
#include "command_line.hpp"
#include "fuzz_support.hpp"
#include "sim_options.hpp"

namespace {

using ata::fuzz::check_limit;
using ata::fuzz::check_strategies;
using ata::fuzz::finding;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto arguments =
      ata::fuzz::decode_arguments(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!arguments) return 0;
  const auto parsed = ata::fuzz::parse_command_line(
      "ata-sim", *arguments,
      [](int argc, const char* const* argv) { return ata::apps::parse_sim_options(argc, argv); });
  if (!parsed || parsed->help) {
    if (parsed && parsed->help->empty()) finding("empty --help text");
    return 0;
  }
  using namespace ata::apps;
  const SimOptions& o = parsed->options;
  constexpr double kMaxWorkers = static_cast<double>(ata::models::Scenario::kMaxWorkers);
  if (o.scenario.empty()) finding("empty --scenario accepted");
  check_limit("--workers", static_cast<double>(o.workers), 0, kMaxWorkers);
  check_limit("--batch", static_cast<double>(o.batch), 1, static_cast<double>(kMaxSimBatch));
  check_limit("--rounds", static_cast<double>(o.rounds), 1, static_cast<double>(kMaxSimRounds));
  check_limit("--change-round", static_cast<double>(o.change_round), 0,
              static_cast<double>(kMaxSimRounds));
  check_limit("--dim", static_cast<double>(o.dim), 1, static_cast<double>(kMaxSimDim));
  if (!(o.step > 0.0 && o.step < kMaxSimStep)) finding("--step " + std::to_string(o.step));
  check_limit("--alpha", o.alpha, 0.0, std::numeric_limits<double>::max());
  if (!(o.eta > 0.0 && std::isfinite(o.eta))) finding("--eta " + std::to_string(o.eta));
  check_limit("--noise", o.noise, 0.0, std::numeric_limits<double>::max());
  check_strategies(o.strategies, {"eofta", "frontier"}, {"ofta", "eofta", "frontier", "gta"});
  const double draws = estimated_draws(o, o.workers);
  if (!(draws > 0.0 && std::isfinite(draws))) finding("estimated draws " + std::to_string(draws));
  return 0;
}

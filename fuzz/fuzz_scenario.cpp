// Fuzz target: the scenario JSON parser (ata::models::parse_scenario).
//
// Input: the text of a scenario file. Bad text must give an ata::Error naming the problem;
// any other exception, a crash, undefined behaviour or a hang is a finding. A scenario that
// parses is used as ata-sim would: its means, a scaled copy, and a few draws of each model.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ata/models/random.hpp"
#include "ata/models/scenario.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  ata::fuzz::expect_only_ata_errors([text] {
    const ata::models::Scenario scenario = ata::models::parse_scenario(text, "fuzz.json");
    static_cast<void>(scenario.means());
    static_cast<void>(scenario.max_mean());
    static_cast<void>(scenario.scaled(1e-3));
    ata::models::Rng rng(1);
    for (const ata::models::TimeModel& model : scenario.models()) {
      static_cast<void>(model.describe());
      for (int draw = 0; draw < 4; ++draw) static_cast<void>(model.sample(rng));
    }
    for (const ata::models::WorkerChange& change : scenario.changes()) {
      static_cast<void>(change.model.sample(rng));
    }
  });
  return 0;
}

#include "ata/sim/trace.hpp"

#include <cmath>

#include "ata/core/error.hpp"
#include "core/chrome_trace.hpp"

namespace ata::sim {

const char* outcome_name(CopyRecord::Outcome outcome) noexcept {
  switch (outcome) {
    case CopyRecord::Outcome::accepted: return "accepted";
    case CopyRecord::Outcome::stopped: return "stopped";
    case CopyRecord::Outcome::restarted: return "restarted";
  }
  return "accepted";
}

std::string chrome_trace_json(std::span<const TraceProcess> processes, double unit_us,
                              TraceSize* size) {
  if (!(std::isfinite(unit_us) && unit_us > 0.0)) {
    throw InvalidArgument("trace unit must be a finite number of microseconds > 0, got " +
                          std::to_string(unit_us));
  }
  TraceSize counts;
  ata::detail::ChromeTrace trace("ata-sim");
  for (std::size_t p = 0; p < processes.size(); ++p) {
    const TraceProcess& process = processes[p];
    const std::size_t pid = p + 1;
    trace.add_process(pid, process.name, process.workers);
    ++counts.processes;
    for (const TracedRound& round : process.rounds) {
      ++counts.rounds;
      const std::string k = std::to_string(round.round);
      trace.add_slice(pid, process.workers, "round", "round " + k, round.start * unit_us,
                      round.wall_time * unit_us,
                      "\"round\":" + k + ",\"copies\":" + std::to_string(round.copies.size()));
      for (const CopyRecord& copy : round.copies) {
        if (copy.worker >= process.workers) {
          throw InvalidArgument("trace of '" + process.name + "': a copy on worker " +
                                std::to_string(copy.worker) + " of " +
                                std::to_string(process.workers));
        }
        const std::string outcome = outcome_name(copy.outcome);
        const std::string task = std::to_string(copy.task);
        std::string name = "task " + task;
        if (copy.outcome != CopyRecord::Outcome::accepted) name += " (" + outcome + ")";
        trace.add_slice(pid, copy.worker, outcome, name, (round.start + copy.start) * unit_us,
                        (copy.end - copy.start) * unit_us,
                        "\"round\":" + k + ",\"task\":" + task + ",\"outcome\":\"" + outcome +
                            "\"");
        ++counts.copies;
      }
    }
  }
  counts.events = trace.events();
  if (size != nullptr) *size = counts;
  return trace.finish();
}

}  // namespace ata::sim

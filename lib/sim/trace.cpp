#include "ata/sim/trace.hpp"

#include <cmath>
#include <vector>

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
  std::vector<std::size_t> copies;  // per task index of the round: how many copies ran
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
      copies.assign(round.copies.size(), 0);
      for (const CopyRecord& copy : round.copies) {
        if (copy.task >= copies.size()) copies.resize(copy.task + 1, 0);
        ++copies[copy.task];
      }
      for (const CopyRecord& copy : round.copies) {
        if (copy.worker >= process.workers) {
          throw InvalidArgument("trace of '" + process.name + "': a copy on worker " +
                                std::to_string(copy.worker) + " of " +
                                std::to_string(process.workers));
        }
        const std::string outcome = outcome_name(copy.outcome);
        const std::string task = std::to_string(copy.task);
        const std::size_t runs = copies[copy.task];
        const bool accepted = copy.outcome == CopyRecord::Outcome::accepted;
        const double start_us = (round.start + copy.start) * unit_us;
        const double duration_us = (copy.end - copy.start) * unit_us;
        trace.add_slice(pid, copy.worker, outcome,
                        ata::detail::task_slice_name(copy.task, runs, accepted ? "" : outcome),
                        start_us, duration_us,
                        "\"round\":" + k + ",\"task\":" + task + ",\"outcome\":\"" + outcome +
                            "\",\"copies\":" + std::to_string(runs));
        // The round as flows, as in the thread runtime's trace.
        trace.add_flow(pid, process.workers, copy.worker, "round " + k,
                       start_us + duration_us / 2.0);
        ++counts.copies;
      }
    }
  }
  counts.events = trace.events();
  if (size != nullptr) *size = counts;
  return trace.finish();
}

}  // namespace ata::sim

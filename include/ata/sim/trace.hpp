#pragma once
/// @file
/// Timelines of simulated rounds as Chrome-trace JSON (the "Trace Event Format" that
/// https://ui.perfetto.dev and chrome://tracing open; docs/timelines.md).

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "ata/sim/simulation.hpp"

namespace ata::sim {

/// One round whose copies were recorded (ExperimentConfig::traced_rounds).
struct TracedRound {
  std::size_t round = 0;  ///< 1-based
  double start = 0.0;     ///< the run's wall time before this round (model units)
  double wall_time = 0.0;
  std::vector<CopyRecord> copies;  ///< times from the round's start, as Simulation keeps them
};

/// The traced rounds of one strategy: one process of the trace.
struct TraceProcess {
  std::string name;
  std::size_t workers = 0;
  std::vector<TracedRound> rounds;  ///< in round order
};

/// What chrome_trace_json() wrote.
struct TraceSize {
  std::size_t processes = 0;
  std::size_t rounds = 0;  ///< traced rounds, summed over processes
  std::size_t copies = 0;  ///< copy slices
  std::size_t events = 0;  ///< every entry of traceEvents, metadata included
};

/// Default scale: one model unit shows as one microsecond in the viewer.
inline constexpr double kDefaultTraceUnitUs = 1.0;

/// The trace as JSON text: process p (pid p + 1) is processes[p]; thread `worker` (tid = worker
/// index) holds one complete slice ("ph": "X") per copy that worker ran, named "task J" for an
/// accepted copy and "task J (stopped)" / "task J (restarted)" otherwise, "task J (N copies,
/// ...)" when the round ran N > 1 copies of J, with "cat" the outcome and args {round, task,
/// outcome, copies}; thread `workers` ("rounds", shown first) holds one slice per round, and
/// the round is a flow (category "batch"): an arrow ("ph" "s" / "f" under one id) from its
/// slice to each of its copies, at the copy's middle. Times are model time x unit_us
/// microseconds ("ts", "dur"). Throws
/// ata::InvalidArgument for a unit_us that is not finite and positive, or a copy on a worker
/// the process does not have. `size`, if given, receives the counts.
[[nodiscard]] std::string chrome_trace_json(std::span<const TraceProcess> processes,
                                            double unit_us = kDefaultTraceUnitUs,
                                            TraceSize* size = nullptr);

/// "accepted", "stopped" or "restarted".
[[nodiscard]] const char* outcome_name(CopyRecord::Outcome outcome) noexcept;

}  // namespace ata::sim

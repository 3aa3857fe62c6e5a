#pragma once
// The apps' timelines of the thread runtime: the --trace file and gantt.png, from what
// ata::runtime::TraceRecorder kept (docs/timelines.md). Apart from app_support so that the
// command-line fuzzers, which link app_support without the runtime, need none of it.

#include <cstddef>
#include <filesystem>
#include <span>
#include <string>

#include "app_support.hpp"
#include "ata/runtime/trace_recorder.hpp"

namespace ata::apps {

/// Writes the traced batches of `processes` (one per strategy) as a Chrome-trace JSON file,
/// whole or not at all (write_file), and prints "wrote FILE: S strategies x R rounds, ..."
/// with its size in bytes.
void write_trace(const std::filesystem::path& path,
                 std::span<const runtime::TracedProcess> processes);
/// gantt.png of the last `rounds` batches of `process` (the traced batches, ending with the
/// run's last): a row per worker, a bar per placed task copy (seconds from the first drawn
/// batch's start), accepted or discarded.
[[nodiscard]] Figure gantt_figure(const runtime::TracedProcess& process, std::size_t rounds,
                                  const std::string& where);

}  // namespace ata::apps

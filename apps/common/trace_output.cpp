#include "trace_output.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <span>

namespace ata::apps {

namespace fs = std::filesystem;

void write_trace(const fs::path& path, std::span<const runtime::TracedProcess> processes) {
  runtime::TraceCounts counts;
  const std::string text = runtime::chrome_trace_json(processes, &counts);
  write_file(path, text);
  std::string note;
  if (counts.unplaced > 0) {
    note = "; " + std::to_string(counts.unplaced) +
           " copies of tracked batches left out (their starts are not recorded)";
  }
  std::printf("wrote %s: %zu %s x %zu rounds, %zu task slices, %zu events, %zu bytes%s\n",
              path.c_str(), counts.processes, counts.processes == 1 ? "strategy" : "strategies",
              counts.processes == 0 ? std::size_t{0} : counts.batches / counts.processes,
              counts.slices, counts.events, text.size(), note.c_str());
}

Figure gantt_figure(const runtime::TracedProcess& process, std::size_t rounds,
                    const std::string& where) {
  // The last rounds: what the strategy does once it has learned (the first are exploration).
  const std::size_t shown = std::min(rounds, process.batches.size());
  const auto drawn = std::span(process.batches).last(shown);
  const std::string which = shown == 0 ? "no rounds"
                                       : "rounds " + std::to_string(drawn.front().round) + "-" +
                                             std::to_string(drawn.back().round);
  Figure f{"gantt.png", process.name + ": " + which + ", a row per worker (" + where + ")",
           "time (s)", "worker", false, false, {}};
  if (shown == 0) return f;
  const auto origin = drawn.front().start;
  for (const runtime::TracedBatch& batch : drawn) {
    const double batch_start = std::chrono::duration<double>(batch.start - origin).count();
    for (const runtime::TaskRecord& task : batch.tasks) {
      if (!task.has_start()) continue;
      f.bars.push_back({static_cast<double>(task.worker),
                        batch_start + std::chrono::duration<double>(task.start).count(),
                        std::chrono::duration<double>(task.duration).count(),
                        task.accepted ? "accepted" : "discarded"});
    }
  }
  return f;
}

}  // namespace ata::apps

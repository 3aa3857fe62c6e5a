#pragma once
/// @file
/// Timelines of a BatchScheduler's batches as Chrome-trace JSON (the "Trace Event Format" that
/// https://ui.perfetto.dev and chrome://tracing open; docs/timelines.md): an Observer that keeps
/// the first and the last batches, and the writer.

#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>
#include <span>
#include <vector>

#include "ata/runtime/observer.hpp"
#include "ata/runtime/round_report.hpp"

namespace ata::runtime {

/// One batch a TraceRecorder kept.
struct TracedBatch {
  std::size_t round = 0;
  std::chrono::steady_clock::time_point start;  ///< RoundReport::start
  std::vector<TaskRecord> tasks;                ///< RoundReport::tasks
};

/// The traced batches of one scheduler: one process of the trace.
struct TracedProcess {
  std::string name;
  std::size_t workers = 0;
  std::vector<TracedBatch> batches;
};

/// What chrome_trace_json() wrote.
struct TraceCounts {
  std::size_t processes = 0;
  std::size_t batches = 0;   ///< batches in the trace, summed over processes
  std::size_t slices = 0;    ///< task slices
  std::size_t events = 0;    ///< every entry of traceEvents, metadata included
  std::size_t unplaced = 0;  ///< copies left out: no start recorded (TaskRecord::kUnmeasured)
};

/// The processes as Chrome-trace JSON: process p (pid p + 1) is processes[p], with a track per
/// worker (tid = worker index) holding a slice per task copy, and a "rounds" track (tid =
/// workers, shown first) with a slice per batch, from its start to its last task's end. Slices:
/// "task J" for an accepted copy (category "accepted"), "task J (discarded)" for one whose
/// result was not kept (category "discarded": a lost backup copy, a fungible race's surplus, a
/// restarted copy, a failed attempt); args hold round, task, outcome and copies (how many
/// copies of index J ran in the batch), and N > 1 copies are marked in the name too: "task J (N
/// copies)", "task J (N copies, discarded)". Each batch is a flow (category "batch"): an arrow
/// ("ph" "s" on the rounds track, "f" with "bp": "e" on the worker's, one id each) from its
/// slice to each of its copies, at the copy's middle, so a viewer links a batch's slices. Times are
/// microseconds from the earliest batch start of all processes. Copies without a start cannot
/// be placed and are left out (TraceCounts::unplaced). Throws ata::InvalidArgument naming a
/// copy whose worker is not below its process's `workers`. `counts`, if given, receives the
/// counts.
[[nodiscard]] std::string chrome_trace_json(std::span<const TracedProcess> processes,
                                            TraceCounts* counts = nullptr);

/// Keeps the task spans of the first `first` and the last `last` succeeded batches it is told
/// of, for chrome_trace_json().
///
/// @code
/// ata::runtime::TraceRecorder recorder(/*first=*/20, /*last=*/20);
/// scheduler.set_observer(&recorder);
/// for (int k = 0; k < 1000; ++k) scheduler.run(23, task);
/// const ata::runtime::TracedProcess process{"ata-e", pool.size(), recorder.batches()};
/// std::string json = ata::runtime::chrome_trace_json({&process, 1});
/// @endcode
///
/// Memory: at most first + last reports' task records (40 bytes a task), allocated as batches
/// come; the last `last` slots are reused, so a long run allocates nothing more once they are
/// filled with batches as large as its largest. A batch whose records cannot be allocated is
/// dropped (dropped()), never an exception on the scheduler's path.
///
/// Thread-safety: every method is thread-safe (one mutex); batches may end concurrently.
class TraceRecorder final : public Observer {
 public:
  /// Keeps the first `first` and the last `last` succeeded batches (all of them while fewer
  /// than first + last have ended). Its slots are allocated here: ata::Error when they cannot
  /// be.
  TraceRecorder(std::size_t first, std::size_t last);

  void on_batch_end(const BatchEnd& end) noexcept override;

  /// Succeeded batches told of so far, kept or not.
  [[nodiscard]] std::size_t batches_seen() const;
  /// Batches not kept for want of memory.
  [[nodiscard]] std::size_t dropped() const;
  /// The kept batches, by round.
  [[nodiscard]] std::vector<TracedBatch> batches() const;

 private:
  mutable std::mutex mutex_;
  const std::size_t first_;
  const std::size_t last_;
  std::vector<TracedBatch> head_;  // the first batches, in the order they ended
  std::vector<TracedBatch> tail_;  // a ring of the last ones, oldest overwritten
  std::size_t seen_ = 0;           // succeeded batches told of
  std::size_t dropped_ = 0;
};

}  // namespace ata::runtime

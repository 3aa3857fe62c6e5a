#pragma once
/// @file
/// Timelines of a BatchScheduler's batches as Chrome-trace JSON (the "Trace Event Format" that
/// https://ui.perfetto.dev and chrome://tracing open; docs/timelines.md): an Observer that keeps
/// the first and the last batches.

#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "ata/runtime/observer.hpp"
#include "ata/runtime/round_report.hpp"

namespace ata::runtime {

/// Keeps the task spans of the first `first` and the last `last` succeeded batches it is told
/// of, and writes them as one process of a Chrome trace: a track per worker with a slice per
/// task copy, and a "rounds" track with a slice per batch.
///
/// @code
/// ata::runtime::TraceRecorder recorder(/*first=*/20, /*last=*/20);
/// scheduler.set_observer(&recorder);
/// for (int k = 0; k < 1000; ++k) scheduler.run(23, task);
/// ata::runtime::TraceRecorder::Size size;
/// std::string json = recorder.chrome_trace_json("ata-sgd", pool.size(), &size);
/// @endcode
///
/// Slices: "task J" for an accepted copy (category "accepted"), "task J (discarded)" for one
/// whose result was not kept (category "discarded": a lost backup copy, a fungible race's
/// surplus, a restarted copy, a failed attempt); an index that ran more than once in its batch
/// has args.copies > 1 on each of its slices. Times are microseconds from the first kept
/// batch's RoundReport::start. Copies without a start (TaskRecord::kUnmeasured: tracked
/// batches) cannot be placed and are left out, counted in Size::unplaced.
///
/// Memory: at most first + last reports' task records (40 bytes a task), allocated as batches
/// come; the last `last` slots are reused, so a long run allocates nothing more once they are
/// filled with batches as large as its largest. A batch whose records cannot be allocated is
/// dropped (Size::dropped), never an exception on the scheduler's path.
///
/// Thread-safety: every method is thread-safe (one mutex); batches may end concurrently.
class TraceRecorder final : public Observer {
 public:
  /// What chrome_trace_json() wrote.
  struct Size {
    std::size_t batches = 0;   ///< batches in the trace
    std::size_t slices = 0;    ///< task slices
    std::size_t events = 0;    ///< every entry of traceEvents, metadata included
    std::size_t unplaced = 0;  ///< copies left out: no start recorded
    std::size_t dropped = 0;   ///< batches not kept: out of memory
  };

  /// Keeps the first `first` and the last `last` succeeded batches (all of them while fewer
  /// than first + last have ended).
  TraceRecorder(std::size_t first, std::size_t last);

  void on_batch_end(const BatchEnd& end) noexcept override;

  /// Succeeded batches told of so far, kept or not.
  [[nodiscard]] std::size_t batches_seen() const;
  /// The kept batches as Chrome-trace JSON: process 1, named `process`, with `workers` worker
  /// tracks. Throws ata::InvalidArgument naming a record whose worker is not below `workers`.
  [[nodiscard]] std::string chrome_trace_json(std::string_view process, std::size_t workers,
                                              Size* size = nullptr) const;

 private:
  struct Kept {
    std::size_t round = 0;
    std::chrono::steady_clock::time_point start;
    std::vector<TaskRecord> tasks;
  };

  mutable std::mutex mutex_;
  const std::size_t first_;
  const std::size_t last_;
  std::vector<Kept> head_;  // the first batches, in the order they ended
  std::vector<Kept> tail_;  // a ring of the last ones: tail_[seen % last_] is the newest
  std::size_t seen_ = 0;    // succeeded batches told of
  std::size_t dropped_ = 0;
};

}  // namespace ata::runtime

#pragma once
/// @file
/// Timelines of a BatchScheduler's batches and a TaskStream's streams as Chrome-trace JSON (the
/// "Trace Event Format" that https://ui.perfetto.dev and chrome://tracing open;
/// docs/timelines.md): an Observer that keeps the first and the last batches, and the first and
/// last tasks of the first and last streams, and the writer.

#include <chrono>
#include <cstddef>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ata/runtime/observer.hpp"
#include "ata/runtime/round_report.hpp"
#include "ata/runtime/stream_report.hpp"

namespace ata::runtime {

/// One batch a TraceRecorder kept.
struct TracedBatch {
  std::size_t round = 0;
  std::chrono::steady_clock::time_point start;  ///< RoundReport::start
  std::vector<TaskRecord> tasks;                ///< RoundReport::tasks
};

/// One stream a TraceRecorder kept.
struct TracedStream {
  std::size_t stream = 0;                       ///< StreamStart::stream
  std::chrono::steady_clock::time_point start;  ///< StreamStart::called
  /// The deliveries kept, in delivery order: the first ones, then the last ones (a gap between
  /// them when more were delivered than kept).
  std::vector<StreamTaskRecord> tasks;
  std::size_t delivered = 0;  ///< tasks delivered, kept or not
  bool ended = false;         ///< its on_stream_end() came
  bool failed = false;        ///< StreamFinish::failed
  StreamEnd end = StreamEnd::consumer;  ///< StreamReport::end, once ended without failing
  std::chrono::nanoseconds wall{0};     ///< StreamReport::wall, once ended
};

/// The traced batches of one scheduler, and the traced streams of one TaskStream beside them
/// (on the same lanes): one process of the trace.
struct TracedProcess {
  std::string name;
  std::size_t workers = 0;
  std::vector<TracedBatch> batches;
  std::vector<TracedStream> streams{};
};

/// What chrome_trace_json() wrote.
struct TraceCounts {
  std::size_t processes = 0;
  std::size_t batches = 0;   ///< batches in the trace, summed over processes
  std::size_t streams = 0;   ///< streams in the trace, summed over processes
  std::size_t slices = 0;    ///< task slices, batches' copies and streams' tasks
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
/// slice to each of its copies, at the copy's middle, so a viewer links a batch's slices.
///
/// A stream's tasks are slices on the same worker tracks: "task J" for a completed task the
/// consumer accepted (category "accepted"), "task J (rejected)" for one it rejected (a stale
/// gradient, say: "rejected"), "task J (stopped)" and "task J (failed)" whatever the verdict
/// ("stopped", "failed"); args hold stream, task (J, the stream's start order), version (the
/// start version), delay, outcome and accepted. Each stream has a slice "stream S" (category
/// "stream") on the rounds track, from its start to its end (or its last kept task's end), with
/// args stream, delivered, kept and end; no flows (args.stream links its tasks).
///
/// Times are microseconds from the earliest batch or stream start of all processes. Copies
/// without a start cannot be placed and are left out (TraceCounts::unplaced). Throws
/// ata::InvalidArgument naming a copy or stream task whose worker is not below its process's
/// `workers`. `counts`, if given, receives the counts.
[[nodiscard]] std::string chrome_trace_json(std::span<const TracedProcess> processes,
                                            TraceCounts* counts = nullptr);

/// How many tasks of each stream a TraceRecorder keeps: the first and the last delivered.
/// The default, 2,000 tasks, makes about 0.4 MB of trace per stream (docs/timelines.md).
struct StreamTraceBound {
  std::size_t first_tasks = 1000;
  std::size_t last_tasks = 1000;
};

/// Keeps the task spans of the first `first` and the last `last` succeeded batches it is told
/// of, and of the first `first` and the last `last` streams the first and last tasks
/// (StreamTraceBound), for chrome_trace_json().
///
/// @code
/// ata::runtime::TraceRecorder recorder(/*first=*/20, /*last=*/20);
/// scheduler.set_observer(&recorder);
/// for (int k = 0; k < 1000; ++k) scheduler.run(23, task);
/// stream.set_observer(&recorder);                 // a TaskStream on the same pool
/// stream.run(gradient, apply, options);
/// const ata::runtime::TracedProcess process{"ata-e", pool.size(), recorder.batches(),
///                                           recorder.streams()};
/// std::string json = ata::runtime::chrome_trace_json({&process, 1});
/// @endcode
///
/// Memory: at most first + last reports' task records (40 bytes a task), allocated as batches
/// come; the last `last` slots are reused, so a long run allocates nothing more once they are
/// filled with batches as large as its largest. A stream's records (56 bytes a task, first_tasks
/// + last_tasks of them) are allocated when it starts, none while it runs. A batch or stream
/// whose records cannot be allocated is dropped (dropped()), never an exception on the
/// scheduler's or the stream's path.
///
/// Thread-safety: every method is thread-safe (one mutex); batches and streams may end
/// concurrently. Stream numbers are a TaskStream's own: one recorder hears at most one
/// TaskStream (and any number of batches).
class TraceRecorder final : public Observer {
 public:
  /// Keeps the first `first` and the last `last` succeeded batches (all of them while fewer
  /// than first + last have ended), and as many streams, each bounded by `stream_tasks`. Its
  /// slots are allocated here: ata::Error when they cannot be.
  TraceRecorder(std::size_t first, std::size_t last, StreamTraceBound stream_tasks = {});

  void on_batch_end(const BatchEnd& end) noexcept override;
  void on_stream_start(const StreamStart& start) noexcept override;
  void on_stream_task(std::size_t stream, const StreamTaskRecord& task) noexcept override;
  void on_stream_end(const StreamFinish& end) noexcept override;

  /// Succeeded batches told of so far, kept or not.
  [[nodiscard]] std::size_t batches_seen() const;
  /// Streams started so far, kept or not.
  [[nodiscard]] std::size_t streams_seen() const;
  /// Batches and streams not kept for want of memory.
  [[nodiscard]] std::size_t dropped() const;
  /// The kept batches, by round.
  [[nodiscard]] std::vector<TracedBatch> batches() const;
  /// The kept streams, by stream number, those still running included (ended false).
  [[nodiscard]] std::vector<TracedStream> streams() const;

 private:
  // A kept stream: its first tasks in `traced.tasks`, then a ring of its last ones.
  struct StreamSlot {
    TracedStream traced;
    std::vector<StreamTaskRecord> tail;
  };
  StreamSlot* recording(std::size_t stream) noexcept;  // mutex_; null if not kept

  mutable std::mutex mutex_;
  const std::size_t first_;
  const std::size_t last_;
  const StreamTraceBound stream_tasks_;
  std::vector<TracedBatch> head_;  // the first batches, in the order they ended
  std::vector<TracedBatch> tail_;  // a ring of the last ones, oldest overwritten
  std::size_t seen_ = 0;           // succeeded batches told of
  std::size_t dropped_ = 0;
  std::vector<StreamSlot> stream_head_;  // the first streams, in the order they started
  std::vector<StreamSlot> stream_tail_;  // a ring of the last ones, oldest overwritten
  std::size_t streams_seen_ = 0;
  // The kept streams that have not ended, by number: their tasks are being recorded.
  std::vector<std::pair<std::size_t, StreamSlot*>> recording_;
};

}  // namespace ata::runtime

#pragma once
/// @file
/// What a task stream did: how each task ended, why the stream ended, its report, and the
/// record of one delivered task that an Observer hears (TaskStream::set_observer()). Plain
/// value types, apart from the stream itself (task_stream.hpp) so that observers need not
/// include the engine.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace ata::runtime {

/// How a streamed task ended.
enum class StreamOutcome : std::uint8_t {
  completed,  ///< it returned, and no stop was requested before it did
  /// A stop was requested before it ended (stale, the stream ending, a shutdown), whatever it
  /// then returned or threw (error() holds what it threw): its time is censored.
  stopped,
  failed,  ///< it threw without a stop request: StreamEvent::error() holds the exception
};

/// Why a stream ended.
enum class StreamEnd : std::uint8_t {
  consumer,        ///< the consumer called StreamDelivery::end_stream()
  stop_requested,  ///< the stop token given to run() (or async_run_stream()'s cancellation)
  deadline,        ///< StreamOptions::set_deadline() passed
  no_workers,      ///< no worker was kept busy any more and no task was running
};

/// "completed", "stopped" or "failed".
[[nodiscard]] const char* outcome_name(StreamOutcome outcome) noexcept;
/// "consumer", "stop_requested", "deadline" or "no_workers".
[[nodiscard]] const char* end_name(StreamEnd end) noexcept;

/// What the consumer makes of a delivery (counted in StreamReport; the stream does nothing
/// else with it: advancing the version is StreamDelivery::advance()).
enum class StreamVerdict : std::uint8_t { accept, reject };

/// One delivered task, as its consumer saw it (the StreamEvent's accessors) and what it said.
///
/// @code
/// void on_stream_task(std::size_t stream, const ata::runtime::StreamTaskRecord& t) noexcept {
///   if (t.outcome == ata::runtime::StreamOutcome::completed && !t.accepted) ++stale;
///   busy[t.worker] += t.duration;
/// }
/// @endcode
struct StreamTaskRecord {
  std::size_t task = 0;              ///< StreamEvent::task(): its number in start order
  std::size_t worker = 0;            ///< StreamEvent::worker()
  std::uint64_t start_version = 0;   ///< StreamEvent::start_version()
  /// StreamEvent::delay() when the consumer was called (before any advance() of its own).
  std::uint64_t delay = 0;
  /// StreamEvent::started(): since the stream was started (StreamStart::called).
  std::chrono::nanoseconds start{0};
  std::chrono::nanoseconds duration{0};  ///< StreamEvent::duration()
  StreamOutcome outcome = StreamOutcome::completed;
  bool accepted = false;  ///< the consumer returned StreamVerdict::accept
};

/// What one stream did.
struct StreamReport {
  StreamEnd end = StreamEnd::consumer;
  /// Tasks started; each was delivered exactly once, so started = completed + stopped +
  /// failed = accepted + rejected.
  std::size_t started = 0;
  std::size_t completed = 0;
  std::size_t stopped = 0;
  std::size_t failed = 0;
  /// Stop requests made because a task's delay reached the stale bound: each such task is
  /// among the stopped ones (a request made before a task ended makes it stopped).
  std::size_t stale_stops = 0;
  std::size_t accepted = 0;
  std::size_t rejected = 0;
  /// The stream's version at the end.
  std::uint64_t version = 0;
  /// From run() to the last delivery, in seconds.
  double wall = 0.0;
  /// Per worker: tasks started, and seconds spent in them.
  std::vector<std::size_t> tasks;
  std::vector<double> busy;
};

}  // namespace ata::runtime

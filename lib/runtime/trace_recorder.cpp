#include "ata/runtime/trace_recorder.hpp"

#include <algorithm>
#include <exception>
#include <new>
#include <string>
#include <string_view>

#include "ata/core/error.hpp"
#include "core/chrome_trace.hpp"

namespace ata::runtime {

namespace {

double microseconds(std::chrono::nanoseconds t) {
  return std::chrono::duration<double, std::micro>(t).count();
}

// The slot of the index-th item (0-based) a first/last recording is told of: a new one of
// `head`, a new one of the ring `tail`, or the ring's oldest; null when it keeps none (last
// is 0). Both have their capacity reserved: emplace_back() does not allocate.
template <class Slot>
Slot* slot_for(std::size_t index, std::size_t first, std::size_t last, std::vector<Slot>& head,
               std::vector<Slot>& tail) {
  if (index < first) return &head.emplace_back();
  if (last == 0) return nullptr;
  const std::size_t t = index - first;
  return t < last ? &tail.emplace_back() : &tail[t % last];
}

// A stream task's category, which its slice's name repeats unless it is "accepted".
const char* stream_category(const StreamTaskRecord& task) noexcept {
  switch (task.outcome) {
    case StreamOutcome::completed:
      return task.accepted ? "accepted" : "rejected";
    case StreamOutcome::stopped:
      return "stopped";
    case StreamOutcome::failed:
      return "failed";
  }
  return "failed";
}

// Stream `stream` of process `pid`: its tasks on their workers' tracks, its slice on the
// rounds track.
void add_stream(detail::ChromeTrace& trace, std::size_t pid, const TracedProcess& process,
                const TracedStream& stream, double stream_us, TraceCounts& written) {
  const std::string s = std::to_string(stream.stream);
  std::chrono::nanoseconds last_end{0};
  for (const StreamTaskRecord& task : stream.tasks) {
    if (task.worker >= process.workers) {
      throw InvalidArgument("trace of '" + process.name + "': stream " + s +
                            " has a task on worker " + std::to_string(task.worker) + " of " +
                            std::to_string(process.workers));
    }
    last_end = std::max(last_end, task.start + task.duration);
    const std::string_view category = stream_category(task);
    trace.add_slice(pid, task.worker, category,
                    detail::task_slice_name(task.task, 1, category == "accepted" ? "" : category),
                    stream_us + microseconds(task.start), microseconds(task.duration),
                    "\"stream\":" + s + ",\"task\":" + std::to_string(task.task) +
                        ",\"version\":" + std::to_string(task.start_version) +
                        ",\"delay\":" + std::to_string(task.delay) + ",\"outcome\":\"" +
                        outcome_name(task.outcome) + "\",\"accepted\":" +
                        (task.accepted ? "true" : "false"));
    ++written.slices;
  }
  const char* end = !stream.ended ? "running" : stream.failed ? "failed" : end_name(stream.end);
  trace.add_slice(pid, process.workers, "stream", "stream " + s, stream_us,
                  microseconds(std::max(stream.wall, last_end)),
                  "\"stream\":" + s + ",\"delivered\":" + std::to_string(stream.delivered) +
                      ",\"kept\":" + std::to_string(stream.tasks.size()) + ",\"end\":\"" +
                      end + "\"");
}

}  // namespace

TraceRecorder::TraceRecorder(std::size_t first, std::size_t last, StreamTraceBound stream_tasks)
    : first_(first), last_(last), stream_tasks_(stream_tasks) {
  // The slots themselves up front: keeping a batch then allocates its records only, and the
  // pointers to stream slots stay valid.
  try {
    head_.reserve(first);
    tail_.reserve(last);
    stream_head_.reserve(first);
    stream_tail_.reserve(last);
  } catch (const std::exception&) {  // std::bad_alloc, or std::length_error past max_size()
    throw Error("out of memory for a trace of the first " + std::to_string(first) +
                " and the last " + std::to_string(last) + " batches");
  }
}

void TraceRecorder::on_batch_end(const BatchEnd& end) noexcept {
  if (end.report == nullptr) return;
  const RoundReport& report = *end.report;
  std::lock_guard lock(mutex_);
  TracedBatch* slot = slot_for(seen_++, first_, last_, head_, tail_);
  if (slot == nullptr) return;
  try {
    slot->tasks.assign(report.tasks.begin(), report.tasks.end());
    slot->round = report.round;
    slot->start = report.start;
  } catch (const std::bad_alloc&) {
    ++dropped_;
    slot->round = 0;  // an empty slot: left out of batches()
    slot->tasks.clear();
  }
}

TraceRecorder::StreamSlot* TraceRecorder::recording(std::size_t stream) noexcept {
  for (auto& [number, slot] : recording_) {
    if (number == stream) return slot;
  }
  return nullptr;
}

void TraceRecorder::on_stream_start(const StreamStart& start) noexcept {
  std::lock_guard lock(mutex_);
  StreamSlot* slot = slot_for(streams_seen_++, first_, last_, stream_head_, stream_tail_);
  if (slot == nullptr) return;
  // A reused slot's stream, the oldest of the last ones, gives it up, ended or not.
  std::erase_if(recording_, [&](const auto& entry) { return entry.second == slot; });
  // A reused slot keeps nothing of its stream but the capacity of its records.
  std::vector<StreamTaskRecord> first_tasks = std::move(slot->traced.tasks);
  first_tasks.clear();
  slot->traced = TracedStream{};
  slot->traced.tasks = std::move(first_tasks);
  slot->tail.clear();
  try {
    slot->traced.tasks.reserve(stream_tasks_.first_tasks);
    slot->tail.reserve(stream_tasks_.last_tasks);
    recording_.emplace_back(start.stream, slot);
  } catch (const std::exception&) {  // std::bad_alloc, or std::length_error past max_size()
    ++dropped_;
    slot->traced.stream = 0;  // an empty slot: left out of streams()
    return;
  }
  slot->traced.stream = start.stream;
  slot->traced.start = start.called;
}

void TraceRecorder::on_stream_task(std::size_t stream, const StreamTaskRecord& task) noexcept {
  std::lock_guard lock(mutex_);
  StreamSlot* slot = recording(stream);
  if (slot == nullptr) return;
  // Within the capacities reserved at the start: no allocation here.
  const std::size_t index = slot->traced.delivered++;
  if (index < stream_tasks_.first_tasks) {
    slot->traced.tasks.push_back(task);
  } else if (slot->tail.size() < stream_tasks_.last_tasks) {
    slot->tail.push_back(task);
  } else if (stream_tasks_.last_tasks > 0) {
    slot->tail[(index - stream_tasks_.first_tasks) % stream_tasks_.last_tasks] = task;
  }
}

void TraceRecorder::on_stream_end(const StreamFinish& end) noexcept {
  std::lock_guard lock(mutex_);
  StreamSlot* slot = recording(end.stream);
  if (slot == nullptr) return;
  std::erase_if(recording_, [&](const auto& entry) { return entry.second == slot; });
  TracedStream& traced = slot->traced;
  traced.ended = true;
  traced.failed = end.failed;
  traced.end = end.report.end;
  traced.wall = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::duration<double>(end.report.wall));
}

std::size_t TraceRecorder::streams_seen() const {
  std::lock_guard lock(mutex_);
  return streams_seen_;
}

std::vector<TracedStream> TraceRecorder::streams() const {
  std::lock_guard lock(mutex_);
  std::vector<TracedStream> kept;
  kept.reserve(stream_head_.size() + stream_tail_.size());
  for (const auto* part : {&stream_head_, &stream_tail_}) {
    for (const StreamSlot& slot : *part) {
      if (slot.traced.stream == 0) continue;
      TracedStream& copy = kept.emplace_back(slot.traced);
      // The ring from its oldest task: the next one to be overwritten, once it is full.
      const std::size_t beyond_first = copy.delivered - copy.tasks.size();
      const std::size_t oldest =
          slot.tail.empty() || beyond_first <= slot.tail.size() ? 0
                                                                : beyond_first % slot.tail.size();
      copy.tasks.insert(copy.tasks.end(), slot.tail.begin() + static_cast<std::ptrdiff_t>(oldest),
                        slot.tail.end());
      copy.tasks.insert(copy.tasks.end(), slot.tail.begin(),
                        slot.tail.begin() + static_cast<std::ptrdiff_t>(oldest));
    }
  }
  std::sort(kept.begin(), kept.end(),
            [](const TracedStream& a, const TracedStream& b) { return a.stream < b.stream; });
  return kept;
}

std::size_t TraceRecorder::batches_seen() const {
  std::lock_guard lock(mutex_);
  return seen_;
}

std::size_t TraceRecorder::dropped() const {
  std::lock_guard lock(mutex_);
  return dropped_;
}

std::vector<TracedBatch> TraceRecorder::batches() const {
  std::lock_guard lock(mutex_);
  std::vector<TracedBatch> kept;
  kept.reserve(head_.size() + tail_.size());
  for (const auto* part : {&head_, &tail_}) {
    for (const TracedBatch& batch : *part) {
      if (batch.round != 0) kept.push_back(batch);
    }
  }
  std::sort(kept.begin(), kept.end(),
            [](const TracedBatch& a, const TracedBatch& b) { return a.round < b.round; });
  return kept;
}

std::string chrome_trace_json(std::span<const TracedProcess> processes, TraceCounts* counts) {
  TraceCounts written;
  std::chrono::steady_clock::time_point origin = std::chrono::steady_clock::time_point::max();
  for (const TracedProcess& process : processes) {
    for (const TracedBatch& batch : process.batches) origin = std::min(origin, batch.start);
    for (const TracedStream& stream : process.streams) origin = std::min(origin, stream.start);
  }
  detail::ChromeTrace trace("ata");
  std::vector<std::size_t> copies;
  for (std::size_t p = 0; p < processes.size(); ++p) {
    const TracedProcess& process = processes[p];
    const std::size_t pid = p + 1;
    trace.add_process(pid, process.name, process.workers);
    ++written.processes;
    for (const TracedBatch& batch : process.batches) {
      ++written.batches;
      const std::string k = std::to_string(batch.round);
      const double batch_us = microseconds(batch.start - origin);
      copies.assign(batch.tasks.size(), 0);
      for (const TaskRecord& task : batch.tasks) {
        if (task.task < copies.size()) ++copies[task.task];
      }
      std::chrono::nanoseconds last_end{0};
      for (const TaskRecord& task : batch.tasks) {
        if (task.worker >= process.workers) {
          throw InvalidArgument("trace of '" + process.name + "': round " + k +
                                " has a task on worker " + std::to_string(task.worker) + " of " +
                                std::to_string(process.workers));
        }
        if (!task.has_start()) {
          ++written.unplaced;
          continue;
        }
        last_end = std::max(last_end, task.start + task.duration);
        const char* outcome = task.accepted ? "accepted" : "discarded";
        const std::string j = std::to_string(task.task);
        const std::size_t runs = task.task < copies.size() ? copies[task.task] : 1;
        const double start_us = batch_us + microseconds(task.start);
        const double duration_us = microseconds(task.duration);
        trace.add_slice(pid, task.worker, outcome,
                        detail::task_slice_name(task.task, runs, task.accepted ? "" : outcome),
                        start_us, duration_us,
                        "\"round\":" + k + ",\"task\":" + j + ",\"outcome\":\"" + outcome +
                            "\",\"copies\":" + std::to_string(runs));
        // The batch as flows: an arrow from its round's slice to each of its copies, at the
        // copy's middle (inside both slices, clear of a neighbour that ends where it starts).
        trace.add_flow(pid, process.workers, task.worker, "round " + k,
                       start_us + duration_us / 2.0);
        ++written.slices;
      }
      trace.add_slice(pid, process.workers, "round", "round " + k, batch_us,
                      microseconds(last_end),
                      "\"round\":" + k + ",\"tasks\":" + std::to_string(batch.tasks.size()));
    }
    for (const TracedStream& stream : process.streams) {
      ++written.streams;
      add_stream(trace, pid, process, stream, microseconds(stream.start - origin), written);
    }
  }
  written.events = trace.events();
  if (counts != nullptr) *counts = written;
  return trace.finish();
}

}  // namespace ata::runtime

#include "ata/runtime/trace_recorder.hpp"

#include <algorithm>
#include <exception>
#include <new>
#include <string>

#include "ata/core/error.hpp"
#include "core/chrome_trace.hpp"

namespace ata::runtime {

namespace {

double microseconds(std::chrono::nanoseconds t) {
  return std::chrono::duration<double, std::micro>(t).count();
}

}  // namespace

TraceRecorder::TraceRecorder(std::size_t first, std::size_t last) : first_(first), last_(last) {
  // The slots themselves up front: keeping a batch then allocates its records only.
  try {
    head_.reserve(first);
    tail_.reserve(last);
  } catch (const std::exception&) {  // std::bad_alloc, or std::length_error past max_size()
    throw Error("out of memory for a trace of the first " + std::to_string(first) +
                " and the last " + std::to_string(last) + " batches");
  }
}

void TraceRecorder::on_batch_end(const BatchEnd& end) noexcept {
  if (end.report == nullptr) return;
  const RoundReport& report = *end.report;
  std::lock_guard lock(mutex_);
  const std::size_t index = seen_++;
  TracedBatch* slot = nullptr;
  if (index < first_) {
    slot = &head_.emplace_back();
  } else if (last_ > 0) {
    const std::size_t t = index - first_;
    slot = t < last_ ? &tail_.emplace_back() : &tail_[t % last_];
  } else {
    return;
  }
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
  }
  written.events = trace.events();
  if (counts != nullptr) *counts = written;
  return trace.finish();
}

}  // namespace ata::runtime

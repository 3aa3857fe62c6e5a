#pragma once
// The Chrome-trace JSON ("Trace Event Format") that https://ui.perfetto.dev and
// chrome://tracing open, written event by event: what the simulator's timelines
// (ata::sim::chrome_trace_json) and the thread runtime's (ata::runtime::TraceRecorder) share.
// Each process has a track per worker (tid = worker index) and, shown first, a "rounds" track
// (tid = number of workers).

#include <cstddef>
#include <string>
#include <string_view>

namespace ata::detail {

class ChromeTrace {
 public:
  // Starts the text with process 0 named `program`.
  explicit ChromeTrace(std::string_view program);

  // Names process `pid` and its tracks: "rounds", then "worker 0" ... "worker n-1".
  void add_process(std::size_t pid, std::string_view name, std::size_t workers);
  // One complete slice ("ph": "X"); `args` is the text of a JSON object's members, without
  // braces. Times in microseconds, written with 3 decimals (nanoseconds).
  void add_slice(std::size_t pid, std::size_t tid, std::string_view category,
                 std::string_view name, double start_us, double duration_us,
                 std::string_view args);

  // A flow arrow of the batch `name` ("ph" "s", then "f" with "bp": "e", under one fresh id):
  // from the slice enclosing `at_us` on track `from_tid` to the slice enclosing it on `to_tid`
  // (the viewers bind each end to its enclosing slice). Two entries of traceEvents.
  void add_flow(std::size_t pid, std::size_t from_tid, std::size_t to_tid, std::string_view name,
                double at_us);

  // Every entry of traceEvents so far, metadata included.
  [[nodiscard]] std::size_t events() const noexcept { return events_; }
  // The finished text; the writer is left empty.
  [[nodiscard]] std::string finish();

 private:
  void add_metadata(const char* what, std::size_t pid, const std::size_t* tid,
                    std::string_view key, std::string_view text, long long number);

  std::string out_;
  std::size_t events_ = 0;
  std::size_t flows_ = 0;  // flow ids given so far
};

// A task slice's name: "task J", with how many copies of J the round ran when more than one
// and a mark of its outcome when not empty: "task 3 (2 copies, discarded)".
[[nodiscard]] std::string task_slice_name(std::size_t task, std::size_t copies,
                                          std::string_view mark);

// `text` as a JSON string, quotes included.
void append_json_string(std::string& out, std::string_view text);

}  // namespace ata::detail

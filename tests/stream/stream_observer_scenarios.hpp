#pragma once
// The observer's stream events on every kind of lanes: one event per delivered task, equal to
// what the consumer saw, between the stream's start and end; and the trace a TraceRecorder
// writes of them. Included after stream_scenarios.hpp (its macros, LaneKinds and helpers).

#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <tuple>

#include "stream/stream_scenarios.hpp"

namespace ata::testing::stream {

// What a delivery looked like, to the consumer or to the observer: task, worker, start
// version, delay, start, duration, outcome, accepted.
using Delivered = std::tuple<std::size_t, std::size_t, std::uint64_t, std::uint64_t,
                             std::chrono::nanoseconds, std::chrono::nanoseconds, rt::StreamOutcome,
                             bool>;

inline Delivered delivered(const rt::StreamTaskRecord& t) {
  return {t.task, t.worker, t.start_version, t.delay, t.start, t.duration, t.outcome, t.accepted};
}

// Keeps every stream event, in the order they came, for the test's thread to check after the
// stream is over (its own mutex: the events come from the lanes and the starter).
class StreamEvents final : public rt::Observer {
 public:
  struct Event {
    enum Kind { start, task, end } kind;
    std::size_t stream;
    std::optional<rt::StreamTaskRecord> record;  // task
    std::vector<std::size_t> workers;            // start
    std::optional<std::uint64_t> stale_bound;    // start
    bool failed = false;                         // end
    std::optional<rt::StreamReport> report;      // end
  };

  void on_stream_start(const rt::StreamStart& start) noexcept override {
    std::lock_guard lock(mutex_);
    events_.push_back(Event{Event::start, start.stream, std::nullopt,
                            std::vector<std::size_t>(start.workers.begin(), start.workers.end()),
                            start.stale_bound, false, std::nullopt});
  }
  void on_stream_task(std::size_t stream, const rt::StreamTaskRecord& task) noexcept override {
    std::lock_guard lock(mutex_);
    events_.push_back(Event{Event::task, stream, task, {}, std::nullopt, false, std::nullopt});
  }
  void on_stream_end(const rt::StreamFinish& end) noexcept override {
    std::lock_guard lock(mutex_);
    events_.push_back(
        Event{Event::end, end.stream, std::nullopt, {}, std::nullopt, end.failed, end.report});
  }

  [[nodiscard]] std::vector<Event> events() const {
    std::lock_guard lock(mutex_);
    return events_;
  }
  // The task events of `stream`, in order.
  [[nodiscard]] std::vector<Delivered> tasks(std::size_t stream) const {
    std::vector<Delivered> out;
    for (const Event& e : events()) {
      if (e.kind == Event::task && e.stream == stream) out.push_back(delivered(*e.record));
    }
    return out;
  }
  // "" if each stream's events are one start, its tasks, then one end.
  [[nodiscard]] std::string order_problem() const {
    std::map<std::size_t, int> phase;  // 0 unseen, 1 started, 2 ended
    for (const Event& e : events()) {
      int& p = phase[e.stream];
      const std::string which = "stream " + std::to_string(e.stream);
      if (e.kind == Event::start && p != 0) return which + " started twice";
      if (e.kind != Event::start && p != 1) return which + ": an event outside start..end";
      p = e.kind == Event::end ? 2 : 1;
    }
    for (const auto& [stream, p] : phase) {
      if (p != 2) return "stream " + std::to_string(stream) + " did not end";
    }
    return "";
  }

 private:
  mutable std::mutex mutex_;
  std::vector<Event> events_;
};

// What the consumer saw of each delivery, in the order it was called.
class ConsumerView {
 public:
  template <class Result>
  void note(rt::StreamDelivery<Result>& d, rt::StreamVerdict verdict) {
    seen_.emplace_back(d.task(), d.worker(), d.start_version(), d.delay(), d.started(),
                       d.duration(), d.outcome(), verdict == rt::StreamVerdict::accept);
  }
  [[nodiscard]] const std::vector<Delivered>& seen() const { return seen_; }

 private:
  std::vector<Delivered> seen_;
};

// (task, track, category, name, version, delay, accepted) of every stream task slice of a trace,
// or what the consumer saw, as the trace should show it, sorted.
using StreamSlice = std::tuple<std::size_t, std::size_t, std::string, std::string, std::uint64_t,
                               std::uint64_t, bool>;

inline std::vector<StreamSlice> stream_slices(const nlohmann::json& trace, std::size_t stream) {
  std::vector<StreamSlice> slices;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") != "X" || e.at("cat") == "stream" || !e.at("args").contains("stream") ||
        e.at("args").at("stream") != stream) {
      continue;
    }
    const auto& args = e.at("args");
    slices.emplace_back(args.at("task").get<std::size_t>(), e.at("tid").get<std::size_t>(),
                        e.at("cat").get<std::string>(), e.at("name").get<std::string>(),
                        args.at("version").get<std::uint64_t>(),
                        args.at("delay").get<std::uint64_t>(), args.at("accepted").get<bool>());
  }
  std::sort(slices.begin(), slices.end());
  return slices;
}

inline std::vector<StreamSlice> expected_slices(const std::vector<Delivered>& seen) {
  std::vector<StreamSlice> slices;
  for (const auto& [task, worker, version, delay, start, duration, outcome, accepted] : seen) {
    const std::string category = outcome == rt::StreamOutcome::stopped  ? "stopped"
                                 : outcome == rt::StreamOutcome::failed ? "failed"
                                 : accepted                             ? "accepted"
                                                                        : "rejected";
    const std::string name = "task " + std::to_string(task) +
                             (category == "accepted" ? "" : " (" + category + ")");
    slices.emplace_back(task, worker, category, name, version, delay, accepted);
  }
  std::sort(slices.begin(), slices.end());
  return slices;
}

TEMPLATE_LIST_TEST_CASE(ATA_STREAM_PREFIX
                        "an observer hears each delivered task once, as its consumer saw it, "
                        "and the trace shows each on its worker's track",
                        "[runtime][stream][observer][trace]" ATA_STREAM_TAG, LaneKinds) {
  constexpr std::size_t kLanes = 3;
  constexpr std::size_t kDeliveries = 150;
  // More if no stopped task came by then (a lane of an executor may start late), up to this.
  constexpr std::size_t kMostDeliveries = 20'000;
  constexpr std::uint64_t kBound = 3;
  StreamRig<TestType> rig(kLanes);
  CAPTURE(TestType::name);
  StreamEvents events;
  rt::TraceRecorder recorder(4, 4, rt::StreamTraceBound{kMostDeliveries + kLanes, 0});
  rt::ObserverList both({&events, &recorder});
  rig.stream.set_observer(&both);
  Ledger ledger;
  ConsumerView view;
  // Worker 2 waits for its stop (its delay reaching the bound, or the end): stopped tasks.
  // Every fifth task of the others throws: failed ones. The consumer rejects those, and one
  // completed task in seven besides, as a stale one would be.
  const auto task = [&](const rt::StreamContext& ctx) -> std::size_t {
    ledger.started();
    if (ctx.worker() == 2) {
      wait_for_stop(ctx);
    } else if (ctx.task() % 5 == 4) {
      throw std::runtime_error("task " + std::to_string(ctx.task()));
    }
    return ctx.task();
  };
  bool stopped_seen = false;
  const auto consumer = [&](rt::StreamDelivery<std::size_t>& d) {
    ledger.record(d);
    const auto verdict = d.completed() && d.task() % 7 != 6 ? rt::StreamVerdict::accept
                                                            : rt::StreamVerdict::reject;
    view.note(d, verdict);
    if (verdict == rt::StreamVerdict::accept) d.advance();
    stopped_seen = stopped_seen || d.stopped();
    if ((view.seen().size() >= kDeliveries && stopped_seen) ||
        view.seen().size() == kMostDeliveries) {
      d.end_stream();
    }
    return verdict;
  };
  const rt::StreamReport report =
      rig.stream.run(task, consumer, rt::StreamOptions{}.set_stale_bound(kBound));
  CHECK(ledger.problem() == "");
  CHECK(report_problem(report, ledger) == "");

  // The events: one start, a task event per delivery equal to what the consumer saw, in the
  // same order, then one end with the report run() returned.
  CHECK(events.order_problem() == "");
  CHECK(rig.stream.streams() == 1);
  const auto all = events.events();
  REQUIRE(all.size() == view.seen().size() + 2);
  CHECK(all.front().stream == 1);
  CHECK(all.front().workers == std::vector<std::size_t>{0, 1, 2});
  CHECK(all.front().stale_bound == kBound);
  CHECK(events.tasks(1) == view.seen());
  const StreamEvents::Event& end = all.back();
  REQUIRE(end.report);
  CHECK_FALSE(end.failed);
  CHECK(end.report->end == rt::StreamEnd::consumer);
  CHECK(end.report->started == report.started);
  CHECK(end.report->accepted == report.accepted);
  CHECK(end.report->stopped == report.stopped);
  CHECK(end.report->failed == report.failed);
  CHECK(end.report->version == report.version);
  CHECK(end.report->wall == report.wall);
  // Each kind of delivery came up, so the trace's marks below are all checked.
  CHECK(report.stopped >= 1);
  CHECK(report.failed >= 1);
  CHECK(report.rejected > report.stopped + report.failed);

  // The trace: a slice per delivery, on its worker's track, marked by outcome and verdict; the
  // stream's slice on the rounds track.
  REQUIRE(recorder.streams_seen() == 1);
  const auto streams = recorder.streams();
  REQUIRE(streams.size() == 1);
  CHECK(streams[0].ended);
  CHECK(streams[0].delivered == view.seen().size());
  const rt::TracedProcess process{"stream", kLanes, {}, streams};
  rt::TraceCounts counts;
  const auto trace = nlohmann::json::parse(rt::chrome_trace_json({&process, 1}, &counts));
  CHECK(stream_slices(trace, 1) == expected_slices(view.seen()));
  CHECK(counts.slices == view.seen().size());
  CHECK(counts.streams == 1);
  CHECK(counts.batches == 0);
  CHECK(counts.events == trace.at("traceEvents").size());
  std::size_t stream_slices_on_rounds_track = 0;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") != "X" || e.at("cat") != "stream") continue;
    ++stream_slices_on_rounds_track;
    CHECK(e.at("tid") == kLanes);
    CHECK(e.at("name") == "stream 1");
    CHECK(e.at("args").at("delivered") == view.seen().size());
    CHECK(e.at("args").at("end") == "consumer");
  }
  CHECK(stream_slices_on_rounds_track == 1);
}

}  // namespace ata::testing::stream

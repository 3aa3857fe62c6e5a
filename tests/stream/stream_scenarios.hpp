#pragma once
// The scenarios of TaskStream every kind of lanes must pass: exactly one delivery per task,
// version tags, stale stops, every end, failing tasks, shutdown mid-stream, a busy set that
// changes. A test file defines ATA_STREAM_TAG (its kinds' tag), ATA_STREAM_PREFIX (the start
// of its test names, unique among the test programs) and LaneKinds (a std::tuple of kinds,
// tests/lanes/lane_kinds.hpp) before including this header. The consumer runs on the lanes,
// so it records what it sees and the test checks it on the main thread (Catch2's assertions
// are for the main thread only).

#include <atomic>
#include <catch2/catch_template_test_macros.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_exception.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "ata/ata.hpp"
#include "lanes/lane_kinds.hpp"
#include "support/eventually.hpp"

namespace ata::testing::stream {

namespace rt = ata::runtime;
using namespace std::chrono_literals;
using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::MessageMatches;

// What a task reports of itself, to check against its delivery's tags.
struct Tags {
  std::size_t task;
  std::size_t worker;
  std::uint64_t version;
};

// Waits on the task's stop token, up to `limit` (a test that forgets to stop fails, not hangs).
inline void wait_for_stop(const rt::StreamContext& ctx, std::chrono::milliseconds limit = 20s) {
  std::mutex mutex;
  std::condition_variable_any never;
  std::unique_lock lock(mutex);
  never.wait_for(lock, ctx.stop_token(), limit, [] { return false; });
}

// One delivery as the consumer saw it.
struct Seen {
  std::size_t task;
  std::size_t worker;
  std::uint64_t start_version;
  std::uint64_t version_after;  // the version when the consumer returned
  std::uint64_t delay;
  rt::StreamOutcome outcome;
  bool ending;
  bool tags_match;
  std::chrono::nanoseconds duration;
};

// The deliveries of one stream, and the tasks started (counted by the tasks themselves).
class Ledger {
 public:
  void started() { started_.fetch_add(1, std::memory_order_relaxed); }
  // Called by the consumer, under the stream's lock: no lock of its own needed, but the
  // main thread reads after run() returns, which happens after every consumer call.
  template <class Result>
  void note(rt::StreamDelivery<Result>& d, bool tags_match) {
    seen_.push_back(Seen{d.task(), d.worker(), d.start_version(), d.version(), d.delay(),
                         d.outcome(), d.ending(), tags_match, d.duration()});
  }
  // note(), for a delivery whose tags are not checked, once the consumer is done with it.
  template <class Result>
  void record(rt::StreamDelivery<Result>& d) {
    note(d, true);
    set_version_after(d.version());
  }
  // The version after the consumer returned, for the last delivery noted.
  void set_version_after(std::uint64_t version) { seen_.back().version_after = version; }
  [[nodiscard]] std::size_t tasks_started() const { return started_.load(); }
  [[nodiscard]] const std::vector<Seen>& seen() const { return seen_; }

  // Each task 0..started-1 delivered exactly once, its tags right; "" if so.
  [[nodiscard]] std::string problem() const {
    std::vector<int> count(tasks_started(), 0);
    if (seen_.size() != tasks_started()) {
      return std::to_string(seen_.size()) + " deliveries for " +
             std::to_string(tasks_started()) + " tasks started";
    }
    for (const Seen& s : seen_) {
      if (s.task >= count.size()) return "task " + std::to_string(s.task) + " out of range";
      if (++count[s.task] != 1) return "task " + std::to_string(s.task) + " delivered twice";
      if (!s.tags_match && s.outcome != rt::StreamOutcome::failed) {
        return "task " + std::to_string(s.task) + ": its tags differ from its delivery's";
      }
      if (s.start_version + s.delay > s.version_after) {
        return "task " + std::to_string(s.task) + ": its delay exceeds the version's progress";
      }
    }
    return "";
  }

 private:
  std::atomic<std::size_t> started_{0};
  std::vector<Seen> seen_;
};

// A kind's lanes and a stream on them.
template <class Kind>
struct StreamRig {
  explicit StreamRig(std::size_t lanes_wanted)
      : lanes(kind.make(rt::LaneOptions(lanes_wanted))), stream(*lanes) {}
  Kind kind;
  std::unique_ptr<rt::Lanes> lanes;
  rt::TaskStream stream;
};

// A report agrees with the ledger: counts add up, per-worker tasks sum to the total.
inline std::string report_problem(const rt::StreamReport& report, const Ledger& ledger) {
  if (report.started != ledger.tasks_started()) return "report.started differs";
  if (report.completed + report.stopped + report.failed != report.started) {
    return "outcomes do not add up";
  }
  if (report.accepted + report.rejected != report.started) return "verdicts do not add up";
  std::size_t per_worker = 0;
  for (std::size_t tasks : report.tasks) per_worker += tasks;
  if (per_worker != report.started) return "per-worker tasks do not add up";
  return "";
}

TEMPLATE_LIST_TEST_CASE(ATA_STREAM_PREFIX
                        "each task is delivered once, tagged with its worker and start version",
                        "[runtime][stream]" ATA_STREAM_TAG, LaneKinds) {
  constexpr std::size_t kLanes = 3;
  constexpr std::size_t kDeliveries = 300;
  StreamRig<TestType> rig(kLanes);
  CAPTURE(TestType::name);
  rt::TaskStream& stream = rig.stream;
  Ledger ledger;
  const auto task = [&](const rt::StreamContext& ctx) {
    ledger.started();
    return Tags{ctx.task(), ctx.worker(), ctx.version()};
  };
  // Per worker, the version the consumer left after that worker's last delivery: its next
  // task starts from that version or a later one (exactly that one on a WorkerPool, where it
  // restarts in the same section: stream_test.cpp).
  std::vector<std::uint64_t> restart_version(kLanes, 0);
  bool restarts_current = true;
  std::vector<bool> delivered_once(kLanes, false);
  const auto consumer = [&](rt::StreamDelivery<Tags>& d) {
    const Tags& tags = d.value();
    const bool match =
        tags.task == d.task() && tags.worker == d.worker() && tags.version == d.start_version();
    if (delivered_once[d.worker()] && d.start_version() < restart_version[d.worker()]) {
      restarts_current = false;
    }
    ledger.note(d, match);
    // Accept two in three, advancing on each.
    const bool accept = d.task() % 3 != 2;
    if (accept) d.advance();
    if (ledger.seen().size() == kDeliveries) d.end_stream();
    restart_version[d.worker()] = d.version();
    delivered_once[d.worker()] = true;
    ledger.set_version_after(d.version());
    return accept ? rt::StreamVerdict::accept : rt::StreamVerdict::reject;
  };
  const rt::StreamReport report = stream.run(task, consumer);
  CHECK(ledger.problem() == "");
  CHECK(report_problem(report, ledger) == "");
  CHECK(report.end == rt::StreamEnd::consumer);
  CHECK(report.started >= kDeliveries);
  CHECK(report.started <= kDeliveries + kLanes - 1);  // the ones running at the end
  CHECK(report.version == report.accepted);
  CHECK(report.failed == 0);
  CHECK(restarts_current);
  for (const Seen& s : ledger.seen()) CHECK(s.start_version <= s.version_after);
}

TEMPLATE_LIST_TEST_CASE(ATA_STREAM_PREFIX
                        "a task whose delay reaches the stale bound is stopped and delivered as "
                        "stopped",
                        "[runtime][stream]" ATA_STREAM_TAG, LaneKinds) {
  constexpr std::uint64_t kBound = 3;
  StreamRig<TestType> rig(2);
  CAPTURE(TestType::name);
  rt::TaskStream& stream = rig.stream;
  Ledger ledger;
  // Worker 1 waits until its stop; worker 0 returns at once while worker 1 is inside a task,
  // and pauses otherwise, so that a loaded machine cannot run it alone for long.
  std::atomic<bool> slow_running = false;
  const auto task = [&](const rt::StreamContext& ctx) {
    ledger.started();
    if (ctx.worker() == 1) {
      slow_running = true;
      wait_for_stop(ctx);
      slow_running = false;
    } else if (!slow_running.load()) {
      std::this_thread::sleep_for(100us);
    }
    return ctx.stop_requested();
  };
  std::size_t slow_stopped = 0;
  bool fast_ever_stopped = false;
  const auto consumer = [&](rt::StreamDelivery<bool>& d) {
    ledger.record(d);
    // Bounded, should worker 1 never run: the checks below then fail.
    if (ledger.seen().size() == 1'000'000) d.end_stream();
    if (d.worker() == 0) {
      // Only the end stops worker 0's tasks: they are never stale.
      fast_ever_stopped = fast_ever_stopped || (d.stopped() && !d.ending());
      d.advance();
      return rt::StreamVerdict::accept;
    }
    if (d.stopped() && !d.ending() && ++slow_stopped == 4) d.end_stream();
    return rt::StreamVerdict::reject;
  };
  const auto report =
      stream.run(task, consumer, rt::StreamOptions{}.set_stale_bound(kBound));
  CHECK(ledger.problem() == "");
  CHECK(report_problem(report, ledger) == "");
  CHECK_FALSE(fast_ever_stopped);
  CHECK(report.stale_stops >= 4);
  std::size_t slow = 0;
  for (const Seen& s : ledger.seen()) {
    if (s.worker != 1) continue;
    ++slow;
    CHECK(s.outcome == rt::StreamOutcome::stopped);
    // Never stopped before its delay reached the bound (the last one, stopped by the end, may be
    // younger).
    if (!s.ending) CHECK(s.delay >= kBound);
    CHECK(s.duration > 0ns);
  }
  CHECK(slow >= 4);
}

TEMPLATE_LIST_TEST_CASE(ATA_STREAM_PREFIX
                        "a stream ends on the consumer, a stop request, a deadline or no workers, "
                        "delivering what runs",
                        "[runtime][stream]" ATA_STREAM_TAG, LaneKinds) {
  StreamRig<TestType> rig(3);
  CAPTURE(TestType::name);
  rt::TaskStream& stream = rig.stream;
  Ledger ledger;
  // Worker 0 returns at once; the others wait for their stop, so each end has tasks to stop.
  const auto task = [&](const rt::StreamContext& ctx) {
    ledger.started();
    if (ctx.worker() != 0) wait_for_stop(ctx);
  };
  std::atomic<std::size_t> deliveries = 0;

  SECTION("the consumer") {
    const auto report = stream.run(task, [&](rt::StreamDelivery<void>& d) {
      ledger.record(d);
      if (deliveries.fetch_add(1) + 1 == 50) d.end_stream();
      return rt::StreamVerdict::accept;
    });
    CHECK(report.end == rt::StreamEnd::consumer);
    CHECK(report_problem(report, ledger) == "");
  }
  SECTION("a stop request") {
    std::stop_source stop;
    std::thread stopper([&] {
      (void)eventually([&] { return deliveries.load() >= 20; });
      stop.request_stop();
    });
    const auto report = stream.run(
        task,
        [&](rt::StreamDelivery<void>& d) {
          ledger.record(d);
          deliveries.fetch_add(1);
          return rt::StreamVerdict::accept;
        },
        {}, stop.get_token());
    stopper.join();
    CHECK(report.end == rt::StreamEnd::stop_requested);
    CHECK(report_problem(report, ledger) == "");
  }
  SECTION("a deadline") {
    const auto report = stream.run(
        task,
        [&](rt::StreamDelivery<void>& d) {
          ledger.record(d);
          return rt::StreamVerdict::accept;
        },
        rt::StreamOptions{}.set_deadline(20ms));
    CHECK(report.end == rt::StreamEnd::deadline);
    CHECK(report_problem(report, ledger) == "");
    CHECK(report.wall >= 0.020);
  }
  SECTION("a deadline of zero starts nothing") {
    const auto report = stream.run(
        task, [&](rt::StreamDelivery<void>&) { return rt::StreamVerdict::accept; },
        rt::StreamOptions{}.set_deadline(0ns));
    CHECK(report.end == rt::StreamEnd::deadline);
    CHECK(report.started == 0);
  }
  SECTION("no workers left") {
    // Worker 0 only, which the consumer takes off after its tenth task.
    const auto report = stream.run(
        task,
        [&](rt::StreamDelivery<void>& d) {
          ledger.record(d);
          if (ledger.seen().size() == 10) d.keep_busy(0, false);
          return rt::StreamVerdict::accept;
        },
        rt::StreamOptions{}.set_workers({0}));
    CHECK(report.end == rt::StreamEnd::no_workers);
    CHECK(report.started == 10);
    CHECK(report.tasks == std::vector<std::size_t>{10, 0, 0});
  }
  CHECK(ledger.problem() == "");
  // Workers 1 and 2 wait for their stop: each task they started was stopped by the end.
  for (const Seen& s : ledger.seen()) {
    if (s.worker == 0) continue;
    CHECK(s.ending);
    CHECK(s.outcome == rt::StreamOutcome::stopped);
  }
}

TEMPLATE_LIST_TEST_CASE(ATA_STREAM_PREFIX
                        "a failing task is delivered as failed; rethrown, it ends the stream",
                        "[runtime][stream][errors]" ATA_STREAM_TAG, LaneKinds) {
  StreamRig<TestType> rig(2);
  CAPTURE(TestType::name);
  rt::TaskStream& stream = rig.stream;
  Ledger ledger;
  const auto task = [&](const rt::StreamContext& ctx) -> std::size_t {
    ledger.started();
    if (ctx.task() % 4 == 1) throw std::runtime_error("task " + std::to_string(ctx.task()));
    return ctx.task();
  };
  SECTION("delivered as failed, the worker going on") {
    bool messages_right = true;
    bool values_right = true;
    const auto report = stream.run(task, [&](rt::StreamDelivery<std::size_t>& d) {
      ledger.record(d);
      if (d.failed()) {
        try {
          std::rethrow_exception(d.error());
        } catch (const std::runtime_error& e) {
          messages_right = messages_right && e.what() == "task " + std::to_string(d.task());
        }
        messages_right = messages_right && !d.has_value();
      } else if (d.has_value()) {
        // (a stopped task may have thrown too: stopped comes first, and it has no value)
        values_right = values_right && d.value() == d.task();
      }
      if (ledger.seen().size() == 40) d.end_stream();
      return d.failed() ? rt::StreamVerdict::reject : rt::StreamVerdict::accept;
    });
    CHECK(ledger.problem() == "");
    CHECK(report_problem(report, ledger) == "");
    CHECK(report.failed >= 9);
    CHECK(messages_right);
    CHECK(values_right);
  }
  SECTION("rethrown by the consumer: run() throws it, after every delivery") {
    CHECK_THROWS_MATCHES(stream.run(task,
                                    [&](rt::StreamDelivery<std::size_t>& d) {
                                      ledger.record(d);
                                      if (d.failed() && !d.ending()) {
                                        std::rethrow_exception(d.error());
                                      }
                                      return rt::StreamVerdict::accept;
                                    }),
                         // the first failure delivered, which need not be task 1's
                         std::runtime_error, MessageMatches(ContainsSubstring("task ")));
    CHECK(ledger.problem() == "");
  }
  SECTION("value() of a failed task throws") {
    CHECK_THROWS_MATCHES(stream.run(task,
                                    [&](rt::StreamDelivery<std::size_t>& d) {
                                      ledger.record(d);
                                      (void)d.value();
                                      return rt::StreamVerdict::accept;
                                    }),
                         ata::Error, MessageMatches(ContainsSubstring("the task failed")));
    CHECK(ledger.problem() == "");
  }
}

TEMPLATE_LIST_TEST_CASE(ATA_STREAM_PREFIX
                        "lanes shut down mid-stream: every running task is delivered, run() "
                        "throws ShutdownError",
                        "[runtime][stream][shutdown]" ATA_STREAM_TAG, LaneKinds) {
  StreamRig<TestType> rig(3);
  CAPTURE(TestType::name);
  rt::TaskStream& stream = rig.stream;
  Ledger ledger;
  std::atomic<std::size_t> waiting = 0;
  const auto task = [&](const rt::StreamContext& ctx) {
    ledger.started();
    if (ctx.task() >= 6) {
      waiting.fetch_add(1);
      wait_for_stop(ctx);
    }
  };
  std::thread shutter([&] {
    (void)eventually([&] { return waiting.load() == 3; });
    rig.lanes->shutdown();
  });
  CHECK_THROWS_AS(stream.run(task,
                             [&](rt::StreamDelivery<void>& d) {
                               ledger.record(d);
                               return rt::StreamVerdict::accept;
                             }),
                  rt::ShutdownError);
  shutter.join();
  CHECK(ledger.problem() == "");
  CHECK(ledger.tasks_started() == 9);
  std::size_t stopped = 0;
  for (const Seen& s : ledger.seen()) stopped += s.outcome == rt::StreamOutcome::stopped ? 1 : 0;
  CHECK(stopped == 3);
  // Shut down, the lanes refuse a new stream.
  CHECK_THROWS_AS(stream.run([](const rt::StreamContext&) {},
                             [](rt::StreamDelivery<void>&) { return rt::StreamVerdict::accept; }),
                  rt::ShutdownError);
}

TEMPLATE_LIST_TEST_CASE(ATA_STREAM_PREFIX "the consumer changes which workers are kept busy",
                        "[runtime][stream]" ATA_STREAM_TAG, LaneKinds) {
  StreamRig<TestType> rig(3);
  CAPTURE(TestType::name);
  rt::TaskStream& stream = rig.stream;
  Ledger ledger;
  const auto task = [&](const rt::StreamContext&) { ledger.started(); };
  // Worker 0 alone for 10 tasks, then workers 1 and 2 instead, until each delivered 5.
  std::size_t delivered_by_zero_after_off = 0;
  bool zero_off = false;
  std::vector<std::size_t> delivered(3, 0);
  const auto report = stream.run(
      task,
      [&](rt::StreamDelivery<void>& d) {
        ledger.record(d);
        if (zero_off && d.worker() == 0) ++delivered_by_zero_after_off;
        ++delivered[d.worker()];
        if (ledger.seen().size() == 10) {
          d.keep_busy(1, true);
          d.keep_busy(2, true);
          d.keep_busy(0, false);
          zero_off = true;
        }
        if (delivered[1] >= 5 && delivered[2] >= 5) d.end_stream();
        return rt::StreamVerdict::accept;
      },
      rt::StreamOptions{}.set_workers({0}));
  CHECK(ledger.problem() == "");
  CHECK(report_problem(report, ledger) == "");
  CHECK(report.tasks[0] == 10);  // taken off in its tenth delivery: no eleventh task
  CHECK(delivered_by_zero_after_off == 0);
  CHECK(report.tasks[1] >= 5);
  CHECK(report.tasks[2] >= 5);
}

}  // namespace ata::testing::stream

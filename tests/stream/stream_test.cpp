// [stream] on WorkerPool and on PostedLanes over plain std::threads (all visible to
// ThreadSanitizer), the scenarios of stream_scenarios.hpp; then what depends on no kind: bad
// input, streams and batches sharing lanes, many concurrent streams.
#include <array>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <stop_token>
#include <thread>
#include <tuple>

#include "lanes/lane_kinds.hpp"

using LaneKinds = std::tuple<ata::testing::OwnThreads, ata::testing::PostedOnThreadQueue>;
#define ATA_STREAM_TAG "[posted]"
#define ATA_STREAM_PREFIX "stream, threads and posted lanes: "
#include "stream/stream_scenarios.hpp"
#include "stream/stream_observer_scenarios.hpp"
#include "support/without_backups.hpp"

namespace ata::testing::stream {
namespace {

rt::StreamVerdict accept_all(rt::StreamDelivery<void>& /*d*/) { return rt::StreamVerdict::accept; }

}  // namespace

TEST_CASE("stream options refuse bad values by name", "[runtime][stream][errors]") {
  CHECK_THROWS_MATCHES(rt::StreamOptions{}.set_workers({0, 2, 0}), ata::InvalidArgument,
                       MessageMatches(ContainsSubstring("worker 0 is listed twice")));
  CHECK_THROWS_MATCHES(rt::StreamOptions{}.set_stale_bound(0), ata::InvalidArgument,
                       MessageMatches(ContainsSubstring("at least 1, got 0")));
  CHECK_THROWS_MATCHES(rt::StreamOptions{}.set_deadline(-1ns), ata::InvalidArgument,
                       MessageMatches(ContainsSubstring("must be >= 0")));
  CHECK(rt::StreamOptions{}.set_stale_bound(4).stale_bound() == 4u);
  CHECK(std::string(rt::outcome_name(rt::StreamOutcome::stopped)) == "stopped");
  CHECK(std::string(rt::end_name(rt::StreamEnd::no_workers)) == "no_workers");
}

TEST_CASE("a stream refuses workers out of range, and waiting for itself",
          "[runtime][stream][errors]") {
  rt::WorkerPool pool(2);
  rt::TaskStream stream(pool);
  std::atomic<int> calls = 0;
  const auto task = [&](const rt::StreamContext&) { calls.fetch_add(1); };
  CHECK_THROWS_MATCHES(stream.run(task, accept_all, rt::StreamOptions{}.set_workers({1, 2})),
                       ata::InvalidArgument,
                       MessageMatches(ContainsSubstring("worker 2") &&
                                      ContainsSubstring("out of range for 2 lanes")));
  CHECK(calls.load() == 0);

  // keep_busy() out of range throws in the consumer, which ends the stream with it.
  CHECK_THROWS_MATCHES(stream.run(task,
                                  [](rt::StreamDelivery<void>& d) {
                                    d.keep_busy(5, true);
                                    return rt::StreamVerdict::accept;
                                  }),
                       ata::InvalidArgument,
                       MessageMatches(ContainsSubstring("keep_busy(): worker 5")));

  // A stream started from one of its lanes' tasks would wait for itself.
  auto policy = ata::make_policy("uta", 2);
  rt::BatchScheduler scheduler(pool, *policy);
  std::string inner_error;
  scheduler.run(1, [&](const rt::TaskContext&) {
    try {
      stream.run(task, accept_all);
    } catch (const ata::Error& e) {
      inner_error = e.what();
    }
  });
  CHECK_THAT(inner_error, ContainsSubstring("would wait for itself"));
}

TEST_CASE("on a WorkerPool a worker restarts from exactly the version its delivery left",
          "[runtime][stream]") {
  rt::WorkerPool pool(3);
  rt::TaskStream stream(pool);
  std::vector<std::uint64_t> left(3, 0);
  std::vector<bool> delivered(3, false);
  std::size_t exact = 0;
  std::size_t later = 0;
  const auto report = stream.run(
      [](const rt::StreamContext&) {},
      [&](rt::StreamDelivery<void>& d) {
        if (delivered[d.worker()]) {
          (d.start_version() == left[d.worker()] ? exact : later) += 1;
        }
        d.advance(d.worker() + 1);
        if (d.task() == 500) d.end_stream();
        left[d.worker()] = d.version();
        delivered[d.worker()] = true;
        return rt::StreamVerdict::accept;
      });
  CHECK(later == 0);
  CHECK(exact + 3 >= report.started);
}

TEST_CASE("a slowed lane's streamed task takes its slowdown, and a stale stop cuts it short",
          "[runtime][stream]") {
  // Lane 1 sleeps an hour after each task, lane 0 not at all. With stale bound 1, lane 1's
  // task is stopped at lane 0's next advance: the test ends only if the stop cuts the sleep.
  rt::PoolOptions options(2);
  options.set_slowdown(1, rt::Slowdown::sleep(ata::models::TimeModel::constant(3.6e6)));
  rt::WorkerPool pool(options);
  rt::TaskStream stream(pool);
  std::vector<Seen> slow;
  const auto report = stream.run(
      [](const rt::StreamContext&) {},
      [&](rt::StreamDelivery<void>& d) {
        if (d.worker() == 1) {
          slow.push_back(Seen{d.task(), d.worker(), d.start_version(), d.version(), d.delay(),
                              d.outcome(), d.ending(), true, d.duration()});
          if (slow.size() == 2) d.end_stream();
          return rt::StreamVerdict::reject;
        }
        d.advance();
        return rt::StreamVerdict::accept;
      },
      rt::StreamOptions{}.set_stale_bound(1));
  REQUIRE(slow.size() == 2);
  for (const Seen& s : slow) {
    CHECK(s.outcome == rt::StreamOutcome::stopped);
    CHECK(s.delay >= 1);
    CHECK(s.duration.count() > 0);
  }
  CHECK(report.stale_stops >= 2);
}

TEST_CASE("a stale stop is requested outside the stream's lock: other lanes deliver meanwhile",
          "[runtime][stream]") {
  // Worker 0's one task waits for its stop, which is stale at the first advance. Its stop
  // callback runs on the lane that requests the stop and holds that lane until another lane
  // has delivered twice more. Requested under the stream's lock, it would wait for nothing:
  // every delivery takes that lock.
  rt::WorkerPool pool(3);
  rt::TaskStream stream(pool);
  std::mutex mutex;
  std::condition_variable delivered;
  std::array<std::size_t, 3> deliveries{};
  bool others_delivered = false;
  std::atomic<bool> registered = false;  // no advance before worker 0's callback is in place
  const auto report = stream.run(
      [&](const rt::StreamContext& ctx) {
        if (ctx.worker() != 0) {
          while (!registered.load()) std::this_thread::sleep_for(100us);
          return;
        }
        std::stop_callback hold(ctx.stop_token(), [&] {
          std::unique_lock lock(mutex);
          const auto before = deliveries;
          others_delivered = delivered.wait_for(lock, 10s, [&] {
            return deliveries[1] >= before[1] + 2 || deliveries[2] >= before[2] + 2;
          });
        });
        registered = true;
        std::mutex wait_mutex;
        std::unique_lock wait_lock(wait_mutex);
        std::condition_variable_any().wait(wait_lock, ctx.stop_token(), [] { return false; });
      },
      [&](rt::StreamDelivery<void>& d) {
        {
          std::lock_guard lock(mutex);
          ++deliveries[d.worker()];
        }
        delivered.notify_all();
        if (d.worker() == 0) {
          CHECK(d.outcome() == rt::StreamOutcome::stopped);
          d.end_stream();
          return rt::StreamVerdict::reject;
        }
        d.advance();
        return rt::StreamVerdict::accept;
      },
      rt::StreamOptions{}.set_stale_bound(1).set_deadline(60s));
  CHECK(report.end == rt::StreamEnd::consumer);
  CHECK(report.stale_stops >= 1);
  CHECK(others_delivered);
}

TEST_CASE("a slowed lane requests stale stops within its task's draw", "[runtime][stream]") {
  // Worker 1's tasks each last a draw of 200 ms; worker 0's one task waits for its stop, stale
  // at worker 1's first advance, and its stop callback takes 100 ms of the thread that requests
  // it: worker 1's, within its second task. That task still ends about a draw after the first
  // ended, not a draw plus the callback (requested before the task, or by the delivery): the
  // bound sits halfway.
  rt::PoolOptions options(2);
  options.set_slowdown(1, rt::Slowdown::sleep(ata::models::TimeModel::constant(200.0), 1ms));
  rt::WorkerPool pool(options);
  rt::TaskStream stream(pool);
  std::atomic<bool> registered = false;
  std::atomic<std::int64_t> callback_ns = 0;
  std::vector<std::chrono::nanoseconds> slow_ends;
  const auto report = stream.run(
      [&](const rt::StreamContext& ctx) {
        if (ctx.worker() == 1) {
          while (!registered.load()) std::this_thread::sleep_for(100us);
          return;
        }
        std::stop_callback hold(ctx.stop_token(), [&] {
          const auto start = std::chrono::steady_clock::now();
          std::this_thread::sleep_for(100ms);
          callback_ns = (std::chrono::steady_clock::now() - start).count();
        });
        registered = true;
        std::mutex wait_mutex;
        std::unique_lock wait_lock(wait_mutex);
        std::condition_variable_any().wait(wait_lock, ctx.stop_token(), [] { return false; });
      },
      [&](rt::StreamDelivery<void>& d) {
        if (d.worker() == 0) return rt::StreamVerdict::reject;
        slow_ends.push_back(d.started() + d.duration());
        if (slow_ends.size() == 2) d.end_stream();
        d.advance();
        return rt::StreamVerdict::accept;
      },
      rt::StreamOptions{}.set_stale_bound(1).set_deadline(60s));
  CHECK(report.stale_stops == 1);
  REQUIRE(slow_ends.size() == 2);
  const std::chrono::nanoseconds callback(callback_ns.load());
  CAPTURE(slow_ends[0].count(), slow_ends[1].count(), callback.count());
  REQUIRE(callback >= 100ms);
  CHECK(slow_ends[1] - slow_ends[0] < 200ms + callback / 2);
}

TEST_CASE("streams and batches share lanes task by task", "[runtime][stream]") {
  rt::WorkerPool pool(2);
  rt::TaskStream stream(pool);
  auto policy = ata::make_policy("uta", 2);
  rt::BatchScheduler scheduler(pool, *policy, without_backups());
  std::atomic<bool> batches_done = false;
  std::size_t batches = 0;
  std::thread batcher([&] {
    for (; batches < 50; ++batches) {
      const auto result = scheduler.run(8, [](const rt::TaskContext& ctx) { return ctx.task(); });
      if (result.values.size() != 8) break;
    }
    batches_done = true;
  });
  // The stream keeps both lanes busy with tiny tasks until the batches are through: they
  // could not be if the stream held its lanes.
  Ledger ledger;
  const auto report = stream.run(
      [&](const rt::StreamContext&) { ledger.started(); },
      [&](rt::StreamDelivery<void>& d) {
        ledger.record(d);
        if (batches_done.load()) d.end_stream();
        return rt::StreamVerdict::accept;
      },
      rt::StreamOptions{}.set_deadline(60s));
  batcher.join();
  CHECK(batches == 50);
  CHECK(report.end == rt::StreamEnd::consumer);
  CHECK(ledger.problem() == "");
}

TEST_CASE("many streams at once on shared lanes, each delivered exactly once",
          "[runtime][stream][stress]") {
  constexpr std::size_t kStreams = 6;
  constexpr std::size_t kRounds = 20;
  rt::WorkerPool pool(3);
  rt::TaskStream stream(pool);
  std::vector<std::string> problems(kStreams);
  std::vector<std::thread> submitters;
  for (std::size_t s = 0; s < kStreams; ++s) {
    submitters.emplace_back([&, s] {
      for (std::size_t round = 0; round < kRounds && problems[s].empty(); ++round) {
        Ledger ledger;
        const std::size_t deliveries = 20 + 7 * s;
        // Streams differ: some on a subset, some with failures, some with a stale bound.
        rt::StreamOptions options;
        if (s % 2 == 1) options.set_workers({s % 3});
        if (s % 3 == 0) options.set_stale_bound(2);
        const auto report = stream.run(
            [&](const rt::StreamContext& ctx) {
              ledger.started();
              if (ctx.task() % 5 == 4 && s % 2 == 0) throw std::runtime_error("planned");
              return ctx.version();
            },
            [&](rt::StreamDelivery<std::uint64_t>& d) {
              const bool tags = !d.has_value() || d.value() == d.start_version();
              ledger.note(d, tags);
              if (d.completed()) d.advance();
              if (ledger.seen().size() == deliveries) d.end_stream();
              ledger.set_version_after(d.version());
              return d.completed() ? rt::StreamVerdict::accept : rt::StreamVerdict::reject;
            },
            options);
        problems[s] = ledger.problem();
        if (problems[s].empty()) problems[s] = report_problem(report, ledger);
        if (problems[s].empty() && report.started < deliveries) problems[s] = "too few tasks";
      }
    });
  }
  for (auto& submitter : submitters) submitter.join();
  for (std::size_t s = 0; s < kStreams; ++s) {
    CAPTURE(s);
    CHECK(problems[s] == "");
  }
}

TEST_CASE("streams shut down at random moments lose no delivery",
          "[runtime][stream][stress][shutdown]") {
  for (int trial = 0; trial < 20; ++trial) {
    CAPTURE(trial);
    auto pool = std::make_unique<rt::WorkerPool>(3);
    rt::TaskStream stream(*pool);
    std::vector<std::unique_ptr<Ledger>> ledgers;
    for (int s = 0; s < 3; ++s) ledgers.push_back(std::make_unique<Ledger>());
    std::vector<std::thread> runners;
    std::atomic<std::size_t> errors = 0;
    for (int s = 0; s < 3; ++s) {
      runners.emplace_back([&, s] {
        Ledger& ledger = *ledgers[s];
        try {
          (void)stream.run(
              [&](const rt::StreamContext& ctx) {
                ledger.started();
                if (ctx.task() % 3 == 0) std::this_thread::sleep_for(50us);
              },
              [&](rt::StreamDelivery<void>& d) {
                ledger.note(d, true);
                d.advance();
                ledger.set_version_after(d.version());
                return rt::StreamVerdict::accept;
              });
        } catch (const rt::ShutdownError&) {
          errors.fetch_add(1);
        }
      });
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200 * trial));
    pool->shutdown();
    for (auto& runner : runners) runner.join();
    CHECK(errors.load() == 3);
    for (const auto& ledger : ledgers) CHECK(ledger->problem() == "");
  }
}

TEST_CASE("a stream's observer is told nothing once unset; refused streams have no events",
          "[runtime][stream][observer]") {
  rt::WorkerPool pool(2);
  rt::TaskStream stream(pool);
  CHECK(stream.observer() == nullptr);
  StreamEvents events;
  stream.set_observer(&events);
  CHECK(stream.observer() == &events);
  const auto ten = [](rt::StreamDelivery<void>& d) {
    if (d.task() == 9) d.end_stream();
    return rt::StreamVerdict::accept;
  };
  const auto empty = [](const rt::StreamContext&) {};
  const auto first = stream.run(empty, ten);
  // Refused before anything runs: no stream number, no event.
  CHECK_THROWS_AS(stream.run(empty, ten, rt::StreamOptions{}.set_workers({5})),
                  ata::InvalidArgument);
  stream.set_observer(nullptr);
  const auto unobserved = stream.run(empty, ten);
  CHECK(stream.streams() == 2);
  CHECK(events.order_problem() == "");
  const auto all = events.events();
  REQUIRE(all.size() == first.started + 2);
  for (const auto& e : all) CHECK(e.stream == 1);
  CHECK(all.back().report->started == first.started);
  // Unobserved, the stream behaves as before: every task delivered, the counts add up.
  CHECK(unobserved.started >= 10);
  CHECK(unobserved.accepted == unobserved.started);
}

TEST_CASE("a stream that fails or starts nothing still ends once for its observer",
          "[runtime][stream][observer][errors]") {
  rt::WorkerPool pool(2);
  rt::TaskStream stream(pool);
  StreamEvents events;
  stream.set_observer(&events);
  SECTION("the consumer throws: the end says failed, after every delivery") {
    ConsumerView view;
    CHECK_THROWS_AS(stream.run([](const rt::StreamContext&) {},
                               [&](rt::StreamDelivery<void>& d) {
                                 view.note(d, rt::StreamVerdict::reject);
                                 if (d.task() == 20) throw std::runtime_error("consumer");
                                 return rt::StreamVerdict::reject;
                               }),
                    std::runtime_error);
    CHECK(events.order_problem() == "");
    CHECK(events.tasks(1) == view.seen());  // the throwing delivery counted as rejected
    const auto all = events.events();
    CHECK(all.back().failed);
    CHECK(all.back().report->started == view.seen().size());
  }
  SECTION("a deadline of zero: a start and an end, nothing between") {
    const auto report = stream.run([](const rt::StreamContext&) {},
                                   [](rt::StreamDelivery<void>&) { return rt::StreamVerdict::accept; },
                                   rt::StreamOptions{}.set_deadline(std::chrono::nanoseconds(0)));
    CHECK(report.started == 0);
    const auto all = events.events();
    REQUIRE(all.size() == 2);
    CHECK(all.back().report->end == rt::StreamEnd::deadline);
    CHECK_FALSE(all.back().failed);
  }
  SECTION("lanes shut down before: the end says failed") {
    pool.shutdown();
    CHECK_THROWS_AS(stream.run([](const rt::StreamContext&) {},
                               [](rt::StreamDelivery<void>&) { return rt::StreamVerdict::accept; }),
                    rt::ShutdownError);
    CHECK(events.order_problem() == "");
    const auto all = events.events();
    REQUIRE(all.size() == 2);
    CHECK(all.back().failed);
  }
}

}  // namespace ata::testing::stream

#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <atomic>

#include <cstddef>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "ata/ata.hpp"
#include "ata/metrics/prometheus_observer.hpp"
#include "support/eventually.hpp"
#include "support/without_backups.hpp"

using namespace std::chrono_literals;
namespace rt = ata::runtime;
using Catch::Matchers::ContainsSubstring;

namespace {

// The one series of family `name` whose labels include `key`="value" (no key: the first).
const prometheus::ClientMetric& series(const std::vector<prometheus::MetricFamily>& families,
                                       const std::string& name, const std::string& key = {},
                                       const std::string& value = {}) {
  for (const prometheus::MetricFamily& family : families) {
    if (family.name != name) continue;
    for (const prometheus::ClientMetric& metric : family.metric) {
      if (key.empty()) return metric;
      for (const auto& label : metric.label) {
        if (label.name == key && label.value == value) return metric;
      }
    }
  }
  FAIL("no series " << name << "{" << key << "=\"" << value << "\"}");
  throw std::logic_error("not reached");
}

}  // namespace

TEST_CASE("the registry counts known batches exactly", "[metrics]") {
  prometheus::Registry registry;
  ata::metrics::PrometheusObserver metrics(registry, 2);
  rt::WorkerPool pool(2);
  ata::UniformPolicy policy(2);
  rt::BatchScheduler scheduler(pool, policy, ata::testing::without_backups());
  scheduler.set_observer(&metrics);
  for (int k = 0; k < 3; ++k) {
    scheduler.run(4, [](const rt::TaskContext&) { std::this_thread::sleep_for(200us); });
  }
  CHECK_THROWS_AS(scheduler.run(4,
                                [](const rt::TaskContext& ctx) {
                                  if (ctx.task() == 0) throw std::runtime_error("task 0");
                                }),
                  std::runtime_error);

  const auto families = registry.Collect();
  CHECK(series(families, "ata_batches_total", "outcome", "succeeded").counter.value == 3.0);
  CHECK(series(families, "ata_batches_total", "outcome", "failed").counter.value == 1.0);
  CHECK(series(families, "ata_batches_total", "outcome", "cancelled").counter.value == 0.0);
  CHECK(series(families, "ata_batches_total", "outcome", "timed_out").counter.value == 0.0);
  CHECK(series(families, "ata_batches_in_flight").gauge.value == 0.0);
  CHECK(series(families, "ata_tasks_total", "outcome", "accepted").counter.value == 12.0);
  CHECK(series(families, "ata_tasks_total", "outcome", "discarded").counter.value == 0.0);
  const auto& wall = series(families, "ata_batch_wall_seconds").histogram;
  CHECK(wall.sample_count == 3);
  CHECK(wall.sample_sum >= 3 * 2 * 200e-6);  // two tasks of 200 us in a row per worker
  CHECK(wall.bucket.size() == ata::metrics::PrometheusObserver::kSecondsBuckets.size() + 1);
  const auto& worker_time = series(families, "ata_batch_worker_seconds").histogram;
  CHECK(worker_time.sample_count == 3);
  CHECK(worker_time.sample_sum >= 12 * 200e-6);
  for (const std::string worker : {"0", "1"}) {
    CHECK(series(families, "ata_worker_tasks_total", "worker", worker).counter.value == 6.0);
    CHECK(series(families, "ata_worker_learned_tasks", "worker", worker).gauge.value == 6.0);
    const double mean =
        series(families, "ata_worker_learned_mean_seconds", "worker", worker).gauge.value;
    CHECK(mean == policy.stats(worker == "0" ? 0 : 1).mean());
    CHECK(mean >= 200e-6);
    CHECK(series(families, "ata_worker_busy_seconds_total", "worker", worker).counter.value >=
          6 * 200e-6);
    const double ratio = series(families, "ata_worker_busy_ratio", "worker", worker).gauge.value;
    CHECK(ratio > 0.0);
    CHECK(ratio <= 1.0);
  }
  CHECK(series(families, "ata_backup_copies_total").counter.value == 0.0);
  CHECK(series(families, "ata_restarts_total").counter.value == 0.0);
}

TEST_CASE("copies and discarded tasks are counted, per worker too", "[metrics]") {
  prometheus::Registry registry;
  ata::metrics::PrometheusObserver metrics(registry, 2, {{"strategy", "gta"}});
  rt::WorkerPool pool(2);
  auto policy = ata::make_policy("gta", 2);
  rt::BatchScheduler scheduler(pool, *policy, ata::testing::without_backups());
  scheduler.set_observer(&metrics);
  const auto report =
      scheduler.run(8, [](const rt::TaskContext&) { std::this_thread::sleep_for(100us); }).report;
  const auto families = registry.Collect();
  CHECK(series(families, "ata_tasks_total", "outcome", "accepted").counter.value == 8.0);
  CHECK(series(families, "ata_tasks_total", "outcome", "discarded").counter.value ==
        static_cast<double>(report.discarded()));
  double run = 0.0;
  for (const std::string worker : {"0", "1"}) {
    run += series(families, "ata_worker_tasks_total", "worker", worker).counter.value;
  }
  CHECK(run == static_cast<double>(report.tasks.size()));
  // The constant label is on every series; the text exposition follows the conventions.
  const std::string text = prometheus::TextSerializer().Serialize(families);
  CHECK_THAT(text, ContainsSubstring("# TYPE ata_batches_total counter\n"));
  CHECK_THAT(text,
             ContainsSubstring("ata_batches_total{strategy=\"gta\",outcome=\"succeeded\"} 1\n"));
  CHECK_THAT(text, ContainsSubstring("# TYPE ata_batch_wall_seconds histogram\n"));
  CHECK_THAT(text, ContainsSubstring("ata_batch_wall_seconds_count{strategy=\"gta\"} 1\n"));
}

TEST_CASE("a name registered with other labels is refused by the constructor", "[metrics]") {
  prometheus::Registry registry;
  ata::metrics::PrometheusObserver first(registry, 1, {{"strategy", "uta"}});
  CHECK_THROWS_WITH(ata::metrics::PrometheusObserver(registry, 1, {{"strategy", "ata"}}),
                    ContainsSubstring("cannot register the scheduler's metrics (ata_*) in this "
                                      "registry: "));
}

TEST_CASE("a stream's tasks are counted by outcome, rejected, stale stops and durations",
          "[metrics][stream]") {
  prometheus::Registry registry;
  ata::metrics::PrometheusObserver metrics(registry, 2);
  rt::WorkerPool pool(2);
  rt::TaskStream stream(pool);
  stream.set_observer(&metrics);
  // Worker 1 waits for its stop: a stale stop once worker 0 advanced twice (worker 0 waits for
  // worker 1's first task to start, which could otherwise come after the last version). Every
  // seventh task of worker 0 throws; the consumer rejects those and the stopped ones.
  std::atomic<bool> slow_started{false};
  const auto report = stream.run(
      [&](const rt::StreamContext& ctx) {
        if (ctx.worker() == 1) {
          slow_started = true;
          while (!ctx.stop_requested()) std::this_thread::sleep_for(20us);
        } else if (!ata::testing::eventually([&] { return slow_started.load(); })) {
          throw std::runtime_error("worker 1 never started");
        } else if (ctx.task() % 7 == 3) {
          throw std::runtime_error("task");
        }
      },
      [](rt::StreamDelivery<void>& d) {
        if (!d.completed()) return rt::StreamVerdict::reject;
        d.advance();
        if (d.version() == 60) d.end_stream();
        return rt::StreamVerdict::accept;
      },
      rt::StreamOptions{}.set_stale_bound(2));
  auto families = registry.Collect();
  const auto count = [&](const std::string& name, const std::string& key = {},
                         const std::string& value = {}) {
    return series(families, name, key, value).counter.value;
  };
  CHECK(count("ata_stream_tasks_total", "outcome", "completed") ==
        static_cast<double>(report.completed));
  CHECK(count("ata_stream_tasks_total", "outcome", "stopped") == static_cast<double>(report.stopped));
  CHECK(count("ata_stream_tasks_total", "outcome", "failed") == static_cast<double>(report.failed));
  CHECK(count("ata_stream_tasks_rejected_total") == static_cast<double>(report.rejected));
  CHECK(count("ata_stream_stale_stops_total") == static_cast<double>(report.stale_stops));
  CHECK(report.stale_stops >= 1);
  CHECK(report.failed >= 1);
  const auto& durations = series(families, "ata_stream_task_seconds").histogram;
  CHECK(durations.sample_count == report.started);
  double busy = 0.0;
  for (const double seconds : report.busy) busy += seconds;
  CHECK(durations.sample_sum == Catch::Approx(busy).epsilon(1e-9));
  CHECK(count("ata_streams_total", "end", "consumer") == 1.0);
  CHECK(count("ata_streams_total", "end", "failed") == 0.0);
  CHECK(series(families, "ata_streams_in_flight").gauge.value == 0.0);

  // A stream whose consumer throws ends as failed.
  CHECK_THROWS_AS(stream.run([](const rt::StreamContext&) {},
                             [](rt::StreamDelivery<void>&) -> rt::StreamVerdict {
                               throw std::runtime_error("consumer");
                             }),
                  std::runtime_error);
  families = registry.Collect();
  CHECK(count("ata_streams_total", "end", "failed") == 1.0);
  CHECK(count("ata_streams_total", "end", "consumer") == 1.0);
  CHECK(series(families, "ata_streams_in_flight").gauge.value == 0.0);
  const std::string text = prometheus::TextSerializer().Serialize(families);
  CHECK_THAT(text, ContainsSubstring("# TYPE ata_stream_task_seconds histogram\n"));
  CHECK_THAT(text, ContainsSubstring("ata_stream_tasks_total{outcome=\"stopped\"} "));
}

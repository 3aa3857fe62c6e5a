#pragma once
/// @file
/// A BatchScheduler's batches and a TaskStream's streams as Prometheus metrics: an Observer that
/// feeds a prometheus::Registry (prometheus-cpp). Part of the optional library ata::prometheus.

#include <array>
#include <cstddef>
#include <span>
#include <vector>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/labels.h>
#include <prometheus/registry.h>

#include "ata/core/worker_stats.hpp"
#include "ata/runtime/observer.hpp"

namespace ata::metrics {

/// Counts batches, tasks, copies and worker time, shows what the policy learned, and counts
/// streams and their tasks (by outcome, rejected, stale stops, durations), in a registry that an
/// exposer or a text serializer publishes. docs/timelines.md lists the metrics: names in base
/// units, counters ending in `_total`, one label `worker` per worker. Set it on a scheduler,
/// a TaskStream, or both.
///
/// @code
/// auto registry = std::make_shared<prometheus::Registry>();
/// ata::metrics::PrometheusObserver metrics(*registry, pool.size(), {{"strategy", "ata-e"}});
/// scheduler.set_observer(&metrics);
/// // ... batches run ...
/// std::string text = prometheus::TextSerializer().Serialize(registry->Collect());
/// @endcode
///
/// The metrics are registered (all label sets included, so every series exists from the
/// start, at 0) by the constructor, which throws ata::InvalidArgument, with prometheus-cpp's
/// reason, when the registry has one of the names with other labels, or a label is invalid.
/// The registry must outlive the observer.
///
/// Thread-safety: the Observer methods may run concurrently (batches of several callers);
/// prometheus-cpp's metrics synchronise themselves. A batch costs the observer a few dozen
/// atomic updates plus O(workers), nothing per task but one pass over its records to count
/// the accepted ones. A streamed task costs a counter or two and a histogram observation,
/// under the stream's lock (on_stream_task()).
class PrometheusObserver final : public runtime::Observer {
 public:
  /// Upper bounds of the wall and worker-time histograms, in seconds (+Inf is implied): from
  /// 10 us to 30 s, about three per decade.
  static constexpr std::array<double, 20> kSecondsBuckets{
      1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2,
      2.5e-2, 5e-2, 0.1,  0.25, 0.5,    1.0,  2.5,  5.0,    10.0, 30.0};

  /// Registers the metrics of a scheduler of `workers` workers in `registry`, each with
  /// `labels` besides its own (say, the strategy's name).
  PrometheusObserver(prometheus::Registry& registry, std::size_t workers,
                     const prometheus::Labels& labels = {});

  void on_batch_start(const runtime::BatchStart& start) noexcept override;
  void on_learned(std::size_t round, std::span<const WorkerStats> learned) noexcept override;
  void on_batch_end(const runtime::BatchEnd& end) noexcept override;
  void on_stream_start(const runtime::StreamStart& start) noexcept override;
  void on_stream_task(std::size_t stream, const runtime::StreamTaskRecord& task) noexcept override;
  void on_stream_end(const runtime::StreamFinish& end) noexcept override;

 private:
  struct Worker {
    prometheus::Gauge* learned_mean;
    prometheus::Gauge* learned_tasks;
    prometheus::Counter* tasks;
    prometheus::Counter* busy_seconds;
    prometheus::Gauge* busy_ratio;
  };

  std::array<prometheus::Counter*, 4> batches_{};  // by runtime::BatchOutcome
  prometheus::Gauge& in_flight_;
  prometheus::Counter& tasks_accepted_;
  prometheus::Counter& tasks_discarded_;
  prometheus::Histogram& wall_;
  prometheus::Histogram& worker_time_;
  prometheus::Counter& backup_copies_;
  prometheus::Counter& takeovers_;
  prometheus::Counter& retries_;
  prometheus::Counter& restarts_;
  std::vector<Worker> workers_;
  // By runtime::StreamEnd, then one for the streams that failed.
  std::array<prometheus::Counter*, 5> streams_{};
  prometheus::Gauge& streams_in_flight_;
  std::array<prometheus::Counter*, 3> stream_tasks_{};  // by runtime::StreamOutcome
  prometheus::Counter& stream_rejected_;
  prometheus::Counter& stream_stale_stops_;
  prometheus::Histogram& stream_task_seconds_;
};

}  // namespace ata::metrics

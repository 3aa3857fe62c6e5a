#pragma once
// What ata-serve counts: responses by status code, batches by outcome, and per worker what the
// policy learned and how busy it was. Rendered as JSON (GET /stats), and, with the scheduler's
// own metrics (ata::metrics::PrometheusObserver), as Prometheus text (GET /metrics).

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/registry.h>
#include <string>
#include <vector>

#include "ata/metrics/prometheus_observer.hpp"

#include "ata/core/worker_stats.hpp"
#include "ata/runtime/round_report.hpp"

namespace ata::service {

/// How a batch ended.
enum class BatchOutcome {
  completed,
  cancelled,  ///< its client disconnected, or the server shut down before it finished
  timed_out,  ///< past --batch-deadline-ms
  failed,     ///< a task threw, or the pool shut down
};

/// The counters of one server.
///
/// @code
/// ata::service::ServiceMetrics metrics(16, {{"strategy", "ata-auto"}});
/// scheduler.set_observer(&metrics.scheduler_observer());
/// metrics.batch_started();
/// metrics.batch_finished(ata::service::BatchOutcome::completed, &report);
/// metrics.count_response(200);
/// std::string text = metrics.prometheus_text();
/// @endcode
///
/// Every method is thread-safe.
class ServiceMetrics {
 public:
  /// `workers` workers; `server` (a JSON object) describes the configuration in /stats.
  ServiceMetrics(std::size_t workers, nlohmann::json server);

  void count_response(unsigned status);
  /// A connection refused because the server had --max-connections open already.
  void count_refused_connection();
  void batch_started();
  /// `report` (completed batches only) feeds the per-worker figures of /stats the way the
  /// scheduler feeds the policy: each accepted task's duration is one observation, so the
  /// learned mean is the policy's stats(i).mean().
  void batch_finished(BatchOutcome outcome, const runtime::RoundReport* report);
  /// The observer to set on the server's scheduler: its batches' metrics join this registry.
  [[nodiscard]] metrics::PrometheusObserver& scheduler_observer() noexcept { return scheduler_; }

  /// {"server": {...}, "batches": {...}, "responses": {"200": n, ...}, "workers": [{"worker",
  /// "learned_mean_seconds", "observations", "tasks_run", "busy_seconds"}, ...]}.
  [[nodiscard]] nlohmann::json stats_json() const;
  /// The registry as Prometheus text (version 0.0.4): the responses and refused connections,
  /// and the scheduler's metrics (docs/timelines.md lists them).
  [[nodiscard]] std::string prometheus_text() const;

 private:
  struct Worker {
    WorkerStats observed;  // accepted task durations, as the policy observes them
    std::size_t tasks_run = 0;
    double busy_seconds = 0.0;
  };

  mutable std::mutex mutex_;
  nlohmann::json server_;
  std::vector<Worker> workers_;
  std::map<unsigned, std::uint64_t> responses_;
  std::uint64_t refused_connections_ = 0;
  std::array<std::uint64_t, 4> batches_{};  // by BatchOutcome
  std::uint64_t in_flight_ = 0;
  // Before the families and the observer, which point into it.
  std::shared_ptr<prometheus::Registry> registry_ = std::make_shared<prometheus::Registry>();
  prometheus::Family<prometheus::Counter>& responses_family_;
  prometheus::Counter& refused_counter_;
  metrics::PrometheusObserver scheduler_;
};

/// "completed", "cancelled", "timed_out", "failed".
[[nodiscard]] const char* outcome_name(BatchOutcome outcome) noexcept;

}  // namespace ata::service

#pragma once
// What ata-serve counts: responses by status code, batches by outcome, batch latencies, and per
// worker what the policy learned and how busy it was. Rendered as JSON (GET /stats) and in
// Prometheus's text exposition format (GET /metrics).

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

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
/// metrics.batch_started();
/// metrics.batch_finished(ata::service::BatchOutcome::completed, latency, &report);
/// metrics.count_response(200);
/// std::string text = metrics.prometheus_text();
/// @endcode
///
/// Every method is thread-safe.
class ServiceMetrics {
 public:
  /// Upper bounds of the batch-latency histogram, in seconds (+Inf is implied).
  static constexpr std::array<double, 14> kLatencyBuckets{
      0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0};

  /// `workers` workers; `server` (a JSON object) describes the configuration in /stats.
  ServiceMetrics(std::size_t workers, nlohmann::json server);

  void count_response(unsigned status);
  /// A connection refused because the server had --max-connections open already.
  void count_refused_connection();
  void batch_started();
  /// `latency`: from the batch's start to its end. `report` (completed batches only) feeds the
  /// per-worker figures the way the scheduler feeds the policy: each accepted task's duration
  /// is one observation, so the learned mean is the policy's stats(i).mean().
  void batch_finished(BatchOutcome outcome, std::chrono::nanoseconds latency,
                      const runtime::RoundReport* report);

  /// {"server": {...}, "batches": {...}, "responses": {"200": n, ...}, "workers": [{"worker",
  /// "learned_mean_seconds", "observations", "tasks_run", "busy_seconds"}, ...]}.
  [[nodiscard]] nlohmann::json stats_json() const;
  /// The same figures, plus the latency histogram, as Prometheus text (version 0.0.4).
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
  std::array<std::uint64_t, kLatencyBuckets.size()> latency_counts_{};  // not cumulative
  std::uint64_t latency_count_ = 0;
  double latency_sum_ = 0.0;
};

/// "completed", "cancelled", "timed_out", "failed".
[[nodiscard]] const char* outcome_name(BatchOutcome outcome) noexcept;

}  // namespace ata::service

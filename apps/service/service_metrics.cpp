#include "service_metrics.hpp"

#include <cstdio>
#include <sstream>

namespace ata::service {

namespace {

constexpr std::array<BatchOutcome, 4> kOutcomes{BatchOutcome::completed, BatchOutcome::cancelled,
                                                BatchOutcome::timed_out, BatchOutcome::failed};

double seconds(std::chrono::nanoseconds t) { return std::chrono::duration<double>(t).count(); }

std::string number(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.9g", value);
  return buffer;
}

void header(std::ostringstream& out, const char* name, const char* type, const char* help) {
  out << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n';
}

}  // namespace

const char* outcome_name(BatchOutcome outcome) noexcept {
  switch (outcome) {
    case BatchOutcome::completed:
      return "completed";
    case BatchOutcome::cancelled:
      return "cancelled";
    case BatchOutcome::timed_out:
      return "timed_out";
    case BatchOutcome::failed:
      return "failed";
  }
  return "failed";
}

ServiceMetrics::ServiceMetrics(std::size_t workers, nlohmann::json server)
    : server_(std::move(server)), workers_(workers) {}

void ServiceMetrics::count_response(unsigned status) {
  const std::lock_guard lock(mutex_);
  ++responses_[status];
}

void ServiceMetrics::count_refused_connection() {
  const std::lock_guard lock(mutex_);
  ++refused_connections_;
}

void ServiceMetrics::batch_started() {
  const std::lock_guard lock(mutex_);
  ++in_flight_;
}

void ServiceMetrics::batch_finished(BatchOutcome outcome, std::chrono::nanoseconds latency,
                                    const runtime::RoundReport* report) {
  const std::lock_guard lock(mutex_);
  --in_flight_;
  ++batches_[static_cast<std::size_t>(outcome)];
  const double s = seconds(latency);
  for (std::size_t b = 0; b < kLatencyBuckets.size(); ++b) {
    if (s <= kLatencyBuckets[b]) {
      ++latency_counts_[b];
      break;
    }
  }
  ++latency_count_;
  latency_sum_ += s;
  if (report == nullptr) return;
  for (const auto& task : report->tasks) {
    if (task.worker >= workers_.size()) continue;
    auto& w = workers_[task.worker];
    ++w.tasks_run;
    if (task.accepted) w.observed.add(seconds(task.duration));
  }
  for (std::size_t i = 0; i < report->busy.size() && i < workers_.size(); ++i) {
    workers_[i].busy_seconds += seconds(report->busy[i]);
  }
}

nlohmann::json ServiceMetrics::stats_json() const {
  const std::lock_guard lock(mutex_);
  nlohmann::json batches{{"in_flight", in_flight_}};
  for (const auto outcome : kOutcomes) {
    batches[outcome_name(outcome)] = batches_[static_cast<std::size_t>(outcome)];
  }
  nlohmann::json responses = nlohmann::json::object();
  for (const auto& [status, count] : responses_) responses[std::to_string(status)] = count;
  nlohmann::json workers = nlohmann::json::array();
  for (std::size_t i = 0; i < workers_.size(); ++i) {
    const auto& w = workers_[i];
    workers.push_back({{"worker", i},
                       {"learned_mean_seconds", w.observed.mean()},
                       {"observations", w.observed.count()},
                       {"tasks_run", w.tasks_run},
                       {"busy_seconds", w.busy_seconds}});
  }
  return {{"server", server_},
          {"batches", batches},
          {"responses", responses},
          {"refused_connections", refused_connections_},
          {"workers", workers}};
}

std::string ServiceMetrics::prometheus_text() const {
  const std::lock_guard lock(mutex_);
  std::ostringstream out;
  header(out, "ata_http_responses_total", "counter", "HTTP responses sent, by status code.");
  for (const auto& [status, count] : responses_) {
    out << "ata_http_responses_total{code=\"" << status << "\"} " << count << '\n';
  }
  header(out, "ata_refused_connections_total", "counter",
         "Connections closed at once because --max-connections were open.");
  out << "ata_refused_connections_total " << refused_connections_ << '\n';
  header(out, "ata_batches_total", "counter", "Batches finished, by outcome.");
  for (const auto outcome : kOutcomes) {
    out << "ata_batches_total{outcome=\"" << outcome_name(outcome) << "\"} "
        << batches_[static_cast<std::size_t>(outcome)] << '\n';
  }
  header(out, "ata_batches_in_flight", "gauge", "Batches started and not finished.");
  out << "ata_batches_in_flight " << in_flight_ << '\n';
  header(out, "ata_batch_latency_seconds", "histogram",
         "From a batch's start to its end, whatever the outcome.");
  std::uint64_t cumulative = 0;
  for (std::size_t b = 0; b < kLatencyBuckets.size(); ++b) {
    cumulative += latency_counts_[b];
    out << "ata_batch_latency_seconds_bucket{le=\"" << number(kLatencyBuckets[b]) << "\"} "
        << cumulative << '\n';
  }
  out << "ata_batch_latency_seconds_bucket{le=\"+Inf\"} " << latency_count_ << '\n';
  out << "ata_batch_latency_seconds_sum " << number(latency_sum_) << '\n';
  out << "ata_batch_latency_seconds_count " << latency_count_ << '\n';
  header(out, "ata_worker_learned_mean_seconds", "gauge",
         "Mean task time the policy has observed from each worker.");
  for (std::size_t i = 0; i < workers_.size(); ++i) {
    out << "ata_worker_learned_mean_seconds{worker=\"" << i << "\"} "
        << number(workers_[i].observed.mean()) << '\n';
  }
  header(out, "ata_worker_tasks_total", "counter",
         "Tasks each worker ran, discarded ones included.");
  for (std::size_t i = 0; i < workers_.size(); ++i) {
    out << "ata_worker_tasks_total{worker=\"" << i << "\"} " << workers_[i].tasks_run << '\n';
  }
  header(out, "ata_worker_busy_seconds_total", "counter",
         "Time each worker spent running tasks, discarded ones included.");
  for (std::size_t i = 0; i < workers_.size(); ++i) {
    out << "ata_worker_busy_seconds_total{worker=\"" << i << "\"} "
        << number(workers_[i].busy_seconds) << '\n';
  }
  return out.str();
}

}  // namespace ata::service

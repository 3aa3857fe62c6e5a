#include "service_metrics.hpp"

#include <prometheus/text_serializer.h>

namespace ata::service {

namespace {

constexpr std::array<BatchOutcome, 4> kOutcomes{BatchOutcome::completed, BatchOutcome::cancelled,
                                                BatchOutcome::timed_out, BatchOutcome::failed};

double seconds(std::chrono::nanoseconds t) { return std::chrono::duration<double>(t).count(); }

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
    : server_(std::move(server)),
      workers_(workers),
      responses_family_(prometheus::BuildCounter()
                            .Name("ata_http_responses_total")
                            .Help("HTTP responses sent, by status code.")
                            .Register(*registry_)),
      refused_counter_(prometheus::BuildCounter()
                           .Name("ata_refused_connections_total")
                           .Help("Connections closed at once because --max-connections were open.")
                           .Register(*registry_)
                           .Add({})),
      scheduler_(*registry_, workers) {}

void ServiceMetrics::count_response(unsigned status) {
  const std::lock_guard lock(mutex_);
  ++responses_[status];
  responses_family_.Add({{"code", std::to_string(status)}}).Increment();
}

void ServiceMetrics::count_refused_connection() {
  const std::lock_guard lock(mutex_);
  ++refused_connections_;
  refused_counter_.Increment();
}

void ServiceMetrics::batch_started() {
  const std::lock_guard lock(mutex_);
  ++in_flight_;
}

void ServiceMetrics::batch_finished(BatchOutcome outcome, const runtime::RoundReport* report) {
  const std::lock_guard lock(mutex_);
  --in_flight_;
  ++batches_[static_cast<std::size_t>(outcome)];
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
  return prometheus::TextSerializer().Serialize(registry_->Collect());
}

}  // namespace ata::service

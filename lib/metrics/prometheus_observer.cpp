#include "ata/metrics/prometheus_observer.hpp"

#include <chrono>
#include <stdexcept>
#include <string>

#include "ata/core/error.hpp"

namespace ata::metrics {

namespace {

double seconds(std::chrono::nanoseconds t) { return std::chrono::duration<double>(t).count(); }

// The slot of ata_streams_total{end="failed"}, after those of runtime::StreamEnd.
constexpr std::size_t kStreamFailed = 4;

template <class Metric>
prometheus::Family<Metric>& family(prometheus::detail::Builder<Metric> builder,
                                   prometheus::Registry& registry, const char* name,
                                   const char* help, const prometheus::Labels& labels) {
  return builder.Name(name).Help(help).Labels(labels).Register(registry);
}

// Registered once: the registry gives the same family back for the same name and labels.
prometheus::Family<prometheus::Counter>& tasks_family(prometheus::Registry& registry,
                                                      const prometheus::Labels& labels) {
  return family(prometheus::BuildCounter(), registry, "ata_tasks_total",
                "Task copies run by succeeded batches, by whether their result was kept "
                "(accepted) or discarded.",
                labels);
}

}  // namespace

PrometheusObserver::PrometheusObserver(prometheus::Registry& registry, std::size_t workers,
                                       const prometheus::Labels& labels) try
    : in_flight_(family(prometheus::BuildGauge(), registry, "ata_batches_in_flight",
                        "Batches started and not yet ended.", labels)
                     .Add({})),
      tasks_accepted_(tasks_family(registry, labels).Add({{"outcome", "accepted"}})),
      tasks_discarded_(tasks_family(registry, labels).Add({{"outcome", "discarded"}})),
      wall_(family(prometheus::BuildHistogram(), registry, "ata_batch_wall_seconds",
                   "Succeeded batches: from the call to run() until it returned "
                   "(RoundReport::wall).",
                   labels)
                .Add({}, prometheus::Histogram::BucketBoundaries(kSecondsBuckets.begin(),
                                                                 kSecondsBuckets.end()))),
      worker_time_(family(prometheus::BuildHistogram(), registry, "ata_batch_worker_seconds",
                          "Succeeded batches: the workers' summed busy time, discarded copies "
                          "included (RoundReport::worker_time()).",
                          labels)
                       .Add({}, prometheus::Histogram::BucketBoundaries(kSecondsBuckets.begin(),
                                                                        kSecondsBuckets.end()))),
      backup_copies_(family(prometheus::BuildCounter(), registry, "ata_backup_copies_total",
                            "Backup copies started of tasks running past their threshold.",
                            labels)
                         .Add({})),
      takeovers_(family(prometheus::BuildCounter(), registry, "ata_takeovers_total",
                        "Unstarted tasks a free worker took over from another's share.", labels)
                     .Add({})),
      retries_(family(prometheus::BuildCounter(), registry, "ata_retries_total",
                      "Failed attempts run again.", labels)
                   .Add({})),
      restarts_(family(prometheus::BuildCounter(), registry, "ata_restarts_total",
                       "Copies stopped at their restart budget and started afresh.", labels)
                    .Add({})),
      streams_in_flight_(family(prometheus::BuildGauge(), registry, "ata_streams_in_flight",
                                "Task streams started and not yet ended.", labels)
                             .Add({})),
      stream_rejected_(family(prometheus::BuildCounter(), registry,
                              "ata_stream_tasks_rejected_total",
                              "Streamed tasks whose delivery the consumer rejected (stale "
                              "gradients, say), whatever their outcome.",
                              labels)
                           .Add({})),
      stream_stale_stops_(family(prometheus::BuildCounter(), registry,
                                 "ata_stream_stale_stops_total",
                                 "Streamed tasks stopped because their delay reached the stale "
                                 "bound (StreamReport::stale_stops of ended streams).",
                                 labels)
                              .Add({})),
      stream_task_seconds_(
          family(prometheus::BuildHistogram(), registry, "ata_stream_task_seconds",
                 "Streamed tasks' durations on their workers, every outcome (a stopped task's "
                 "up to its stop).",
                 labels)
              .Add({}, prometheus::Histogram::BucketBoundaries(kSecondsBuckets.begin(),
                                                               kSecondsBuckets.end()))) {
  auto& batches = family(prometheus::BuildCounter(), registry, "ata_batches_total",
                         "Batches ended, by outcome.", labels);
  for (const auto outcome : {runtime::BatchOutcome::succeeded, runtime::BatchOutcome::failed,
                             runtime::BatchOutcome::cancelled, runtime::BatchOutcome::timed_out}) {
    batches_[static_cast<std::size_t>(outcome)] =
        &batches.Add({{"outcome", runtime::outcome_name(outcome)}});
  }
  auto& learned_mean =
      family(prometheus::BuildGauge(), registry, "ata_worker_learned_mean_seconds",
             "The policy's learned mean task time of each worker, after the last batch.", labels);
  auto& learned_tasks = family(prometheus::BuildGauge(), registry, "ata_worker_learned_tasks",
                               "How many finished tasks each worker's learned mean is from.",
                               labels);
  auto& tasks = family(prometheus::BuildCounter(), registry, "ata_worker_tasks_total",
                       "Task copies each worker ran in succeeded batches, discarded ones "
                       "included.",
                       labels);
  auto& busy = family(prometheus::BuildCounter(), registry, "ata_worker_busy_seconds_total",
                      "Time each worker spent running tasks of succeeded batches, discarded "
                      "copies included.",
                      labels);
  auto& busy_ratio = family(prometheus::BuildGauge(), registry, "ata_worker_busy_ratio",
                            "Share of the last succeeded batch's wall time each worker was "
                            "busy with it.",
                            labels);
  auto& streams = family(prometheus::BuildCounter(), registry, "ata_streams_total",
                         "Task streams ended, by why they ended, or failed.", labels);
  for (const auto end : {runtime::StreamEnd::consumer, runtime::StreamEnd::stop_requested,
                         runtime::StreamEnd::deadline, runtime::StreamEnd::no_workers}) {
    streams_[static_cast<std::size_t>(end)] = &streams.Add({{"end", runtime::end_name(end)}});
  }
  streams_[kStreamFailed] = &streams.Add({{"end", "failed"}});
  auto& stream_tasks = family(prometheus::BuildCounter(), registry, "ata_stream_tasks_total",
                              "Streamed tasks delivered, by outcome.", labels);
  for (const auto outcome : {runtime::StreamOutcome::completed, runtime::StreamOutcome::stopped,
                             runtime::StreamOutcome::failed}) {
    stream_tasks_[static_cast<std::size_t>(outcome)] =
        &stream_tasks.Add({{"outcome", runtime::outcome_name(outcome)}});
  }
  workers_.reserve(workers);
  for (std::size_t i = 0; i < workers; ++i) {
    const prometheus::Labels worker = {{"worker", std::to_string(i)}};
    workers_.push_back({&learned_mean.Add(worker), &learned_tasks.Add(worker),
                        &tasks.Add(worker), &busy.Add(worker), &busy_ratio.Add(worker)});
  }
} catch (const std::invalid_argument& e) {
  // prometheus-cpp refuses a name already registered otherwise, or a bad label.
  throw InvalidArgument(std::string("cannot register the scheduler's metrics (ata_*) in this "
                                    "registry: ") +
                        e.what());
}

void PrometheusObserver::on_batch_start(const runtime::BatchStart& /*start*/) noexcept {
  in_flight_.Increment();
}

void PrometheusObserver::on_learned(std::size_t /*round*/,
                                    std::span<const WorkerStats> learned) noexcept {
  for (std::size_t i = 0; i < learned.size() && i < workers_.size(); ++i) {
    workers_[i].learned_mean->Set(learned[i].mean());
    workers_[i].learned_tasks->Set(static_cast<double>(learned[i].count()));
  }
}

void PrometheusObserver::on_batch_end(const runtime::BatchEnd& end) noexcept {
  in_flight_.Decrement();
  batches_[static_cast<std::size_t>(end.outcome)]->Increment();
  const runtime::RoundReport* report = end.report;
  if (report == nullptr) return;
  wall_.Observe(seconds(report->wall));
  worker_time_.Observe(seconds(report->worker_time()));
  backup_copies_.Increment(static_cast<double>(report->backup_copies));
  takeovers_.Increment(static_cast<double>(report->takeovers));
  retries_.Increment(static_cast<double>(report->retries));
  restarts_.Increment(static_cast<double>(report->restarts));
  // The accepted copies are the allocation (which a report without task records keeps too);
  // the discarded ones are the records not accepted, few but for greedy batches' surplus.
  tasks_accepted_.Increment(static_cast<double>(report->allocation.total()));
  std::size_t discarded = 0;
  for (const runtime::TaskRecord& task : report->tasks) {
    if (task.accepted || task.worker >= workers_.size()) continue;
    ++discarded;
    workers_[task.worker].tasks->Increment();
  }
  tasks_discarded_.Increment(static_cast<double>(discarded));
  const double wall = seconds(report->wall);
  for (std::size_t i = 0; i < workers_.size(); ++i) {
    Worker& worker = workers_[i];
    if (i < report->allocation.size()) {
      worker.tasks->Increment(static_cast<double>(report->allocation[i]));
    }
    if (i < report->busy.size()) {
      const double busy = seconds(report->busy[i]);
      worker.busy_seconds->Increment(busy);
      worker.busy_ratio->Set(wall > 0.0 ? busy / wall : 0.0);
    }
  }
}

void PrometheusObserver::on_stream_start(const runtime::StreamStart& /*start*/) noexcept {
  streams_in_flight_.Increment();
}

void PrometheusObserver::on_stream_task(std::size_t /*stream*/,
                                        const runtime::StreamTaskRecord& task) noexcept {
  stream_tasks_[static_cast<std::size_t>(task.outcome)]->Increment();
  if (!task.accepted) stream_rejected_.Increment();
  stream_task_seconds_.Observe(seconds(task.duration));
}

void PrometheusObserver::on_stream_end(const runtime::StreamFinish& end) noexcept {
  streams_in_flight_.Decrement();
  streams_[end.failed ? kStreamFailed : static_cast<std::size_t>(end.report.end)]->Increment();
  stream_stale_stops_.Increment(static_cast<double>(end.report.stale_stops));
}

}  // namespace ata::metrics

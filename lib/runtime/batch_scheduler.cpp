#include "ata/runtime/batch_scheduler.hpp"

#include <mutex>
#include <string>

#include "ata/core/error.hpp"
#include "core/checks.hpp"
#include "runtime/lane_set.hpp"
#include "runtime/scheduler_engine.hpp"

namespace ata::runtime {

SchedulerOptions& SchedulerOptions::set_backup_threshold(double multiple) {
  if (!(multiple > 1.0)) {
    throw InvalidArgument("backup threshold must be > 1 (x the learned mean), got " +
                          ata::detail::to_text(multiple));
  }
  backup_threshold_ = multiple;
  return *this;
}

SchedulerOptions& SchedulerOptions::set_backup_copies(std::size_t copies) {
  if (copies == 0) throw InvalidArgument("backup copies must be >= 1 per task, got 0");
  backup_copies_ = copies;
  return *this;
}

SchedulerOptions& SchedulerOptions::set_backup_min_overdue(std::chrono::nanoseconds after) {
  if (after < std::chrono::nanoseconds{0}) {
    throw InvalidArgument("backup min_overdue must be >= 0 ns, got " +
                          std::to_string(after.count()) + " ns");
  }
  backup_min_overdue_ = after;
  return *this;
}

SchedulerOptions& SchedulerOptions::set_stuck_after(double multiple) {
  if (!(multiple > 1.0)) {
    throw InvalidArgument("stuck_after must be > 1 (x the learned mean), got " +
                          ata::detail::to_text(multiple));
  }
  stuck_after_ = multiple;
  return *this;
}

BatchScheduler::BatchScheduler(Lanes& lanes, Policy& policy, const SchedulerOptions& options)
    : lanes_(lanes),
      policy_(policy),
      options_(options),
      engine_(std::make_unique<detail::SchedulerEngine>(options.max_in_flight())) {
  if (policy_.workers() != lanes_.size()) {
    throw InvalidArgument("policy '" + std::string(policy_.name()) + "' has " +
                          std::to_string(policy_.workers()) + " workers but there are " +
                          std::to_string(lanes_.size()) + " lanes");
  }
  if (options_.binding() == Binding::late) {
    if (options_.backups() != Backups::off || options_.retries() > 0) {
      throw InvalidArgument(
          "binding late: backups and retries apply to allocated batches; turn them off or "
          "bind on arrival");
    }
    engine_->pacer = std::make_shared<detail::Pacer>(detail::core_of(lanes_), engine_->deadlines);
  }
  if (options_.time_chunks() && policy_.needs_every_sample()) {
    throw InvalidArgument("time_chunks: policy '" + std::string(policy_.name()) +
                          "' learns from every task's time; time tasks, not chunks");
  }
}

BatchScheduler::~BatchScheduler() = default;

std::size_t BatchScheduler::rounds() const {
  std::lock_guard lock(policy_.mutex());
  return rounds_;
}

std::size_t BatchScheduler::in_flight() const { return engine_->admission.in_flight(); }

void BatchScheduler::check_batch(std::size_t batch, const BatchOptions& options) {
  if (batch == 0) throw InvalidArgument("a batch needs at least one task, got B = 0");
  if (batch > kMaxBatch) {
    throw InvalidArgument("a batch has at most " + std::to_string(kMaxBatch) +
                          " tasks (BatchScheduler::kMaxBatch), got B = " + std::to_string(batch));
  }
  if (options.deadline < std::chrono::nanoseconds{0}) {
    throw InvalidArgument("a batch's deadline must be >= 0 ns (0: none), got " +
                          std::to_string(options.deadline.count()) + " ns");
  }
}

}  // namespace ata::runtime

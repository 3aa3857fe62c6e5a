#include "ata/runtime/batch_scheduler.hpp"

#include <mutex>
#include <string>
#include <system_error>

#include "ata/core/error.hpp"
#include "core/checks.hpp"
#include "runtime/lane_set.hpp"
#include "runtime/scheduler_engine.hpp"

namespace ata::runtime {

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
  // Backups, restart budgets and deadlines need the timer from the first batch on. A pool
  // out of threads only delays it: the first batch that needs it tries again, and a batch
  // that cannot arm it still runs (its idle lanes help as they end tasks).
  try {
    engine_->deadlines.start();
  } catch (const std::system_error&) {
  }
}

BatchScheduler::BatchScheduler(Lanes& lanes, Policy& policy, const LateBindingOptions& options)
    : BatchScheduler(lanes, policy, options.on_arrival()) {
  // The pacer queues each task on the lane that should run it next, when it should: a
  // caller lane has no queue, and its caller is there only while its own batch runs.
  if (lanes_.has_caller_lane()) {
    throw InvalidArgument(
        "late binding needs a thread per lane; this pool's last worker is the caller lane "
        "(CallerLanePool)");
  }
  engine_->pacer = std::make_shared<detail::Pacer>(detail::core_of(lanes_), engine_->deadlines);
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

#include "ata/runtime/batch_scheduler.hpp"

#include <mutex>
#include <string>

#include "ata/core/error.hpp"
#include "runtime/scheduler_engine.hpp"

namespace ata::runtime {

BatchScheduler::BatchScheduler(WorkerPool& pool, Policy& policy, const SchedulerOptions& options)
    : pool_(pool),
      policy_(policy),
      options_(options),
      engine_(std::make_unique<detail::SchedulerEngine>(options.max_in_flight())) {
  if (policy_.workers() != pool_.size()) {
    throw InvalidArgument("policy '" + std::string(policy_.name()) + "' has " +
                          std::to_string(policy_.workers()) + " workers but the pool has " +
                          std::to_string(pool_.size()));
  }
}

BatchScheduler::~BatchScheduler() = default;

std::size_t BatchScheduler::rounds() const {
  std::lock_guard lock(policy_.mutex());
  return rounds_;
}

std::size_t BatchScheduler::in_flight() const { return engine_->admission.in_flight(); }

void BatchScheduler::check_batch(std::size_t batch) {
  if (batch == 0) throw InvalidArgument("a batch needs at least one task, got B = 0");
  if (batch > kMaxBatch) {
    throw InvalidArgument("a batch has at most " + std::to_string(kMaxBatch) +
                          " tasks (BatchScheduler::kMaxBatch), got B = " + std::to_string(batch));
  }
}

}  // namespace ata::runtime

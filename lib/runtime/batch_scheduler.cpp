#include "ata/runtime/batch_scheduler.hpp"

#include <memory>
#include <string>

#include "ata/core/error.hpp"
#include "runtime/batch.hpp"
#include "runtime/pool_core.hpp"

namespace ata::runtime {

BatchScheduler::BatchScheduler(WorkerPool& pool, Policy& policy) : pool_(pool), policy_(policy) {
  if (policy_.workers() != pool_.size()) {
    throw InvalidArgument("policy '" + std::string(policy_.name()) + "' has " +
                          std::to_string(policy_.workers()) + " workers but the pool has " +
                          std::to_string(pool_.size()));
  }
}

std::size_t BatchScheduler::rounds() const {
  std::lock_guard lock(policy_mutex_);
  return rounds_;
}

BatchScheduler::Outcome BatchScheduler::dispatch(std::size_t batch, detail::TaskBody& body,
                                                 std::chrono::steady_clock::time_point start) {
  if (batch == 0) throw InvalidArgument("a batch needs at least one task, got B = 0");
  if (pool_.core_->is_own_thread()) {
    throw Error(
        "BatchScheduler::run() called from a task of its own pool would wait for "
        "itself; run batches from other threads");
  }
  Dispatch mode = Dispatch::allocated;
  Allocation allocation;
  std::size_t round = 0;
  {
    std::lock_guard lock(policy_mutex_);
    mode = policy_.dispatch();
    if (mode == Dispatch::allocated) policy_.allocate(batch, allocation);
    round = ++rounds_;
  }

  const auto job = std::make_shared<detail::Batch>(mode, batch, round, std::move(allocation),
                                                   pool_.size(), body);
  job->run_on(*pool_.core_, pool_.options().idle_spin());

  Outcome outcome;
  job->collect(outcome.report, outcome.slot_order);
  outcome.report.round = round;
  {
    std::lock_guard lock(policy_mutex_);
    // The one place where measured durations become the core's seconds.
    for (const TaskRecord& task : outcome.report.tasks) {
      if (task.accepted) {
        policy_.observe(task.worker, std::chrono::duration<double>(task.duration).count());
      }
    }
  }
  outcome.report.wall = std::chrono::steady_clock::now() - start;
  return outcome;
}

}  // namespace ata::runtime

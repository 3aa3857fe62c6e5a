#include "ata/runtime/batch_scheduler.hpp"

#include <limits>
#include <memory>
#include <mutex>
#include <new>
#include <string>

#include "ata/core/error.hpp"
#include "runtime/blocking_batch.hpp"
#include "runtime/pool_core.hpp"

namespace ata::runtime {

namespace detail {

void throw_out_of_memory(std::size_t batch, const char* what) {
  throw Error("out of memory for the " + std::string(what) +
              " of a batch of B = " + std::to_string(batch) + " tasks");
}

}  // namespace detail

namespace {

// The policy's allocation must give every worker a count and hand out exactly B tasks: the
// batch sizes its result slots and task ranges from it.
void require_valid_allocation(const Policy& policy, const Allocation& allocation, std::size_t batch,
                              std::size_t workers) {
  if (allocation.size() != workers) {
    throw Error("policy '" + std::string(policy.name()) + "' allocated tasks to " +
                std::to_string(allocation.size()) + " workers, but the pool has " +
                std::to_string(workers));
  }
  // Summed here rather than taken from total(), which a huge count could wrap around.
  std::size_t sum = 0;
  bool overflow = false;
  for (std::size_t tasks : allocation) {
    overflow = overflow || tasks > std::numeric_limits<std::size_t>::max() - sum;
    sum = overflow ? std::numeric_limits<std::size_t>::max() : sum + tasks;
  }
  if (overflow || sum != batch) {
    throw Error("policy '" + std::string(policy.name()) + "' allocated " +
                (overflow ? "more than " : "") + std::to_string(sum) +
                " tasks for a batch of B = " + std::to_string(batch) +
                "; an allocation must sum to B");
  }
}

}  // namespace

BatchScheduler::BatchScheduler(WorkerPool& pool, Policy& policy) : pool_(pool), policy_(policy) {
  if (policy_.workers() != pool_.size()) {
    throw InvalidArgument("policy '" + std::string(policy_.name()) + "' has " +
                          std::to_string(policy_.workers()) + " workers but the pool has " +
                          std::to_string(pool_.size()));
  }
}

std::size_t BatchScheduler::rounds() const {
  std::lock_guard lock(policy_.mutex());
  return rounds_;
}

void BatchScheduler::check_batch(std::size_t batch) {
  if (batch == 0) throw InvalidArgument("a batch needs at least one task, got B = 0");
  if (batch > kMaxBatch) {
    throw InvalidArgument("a batch has at most " + std::to_string(kMaxBatch) +
                          " tasks (BatchScheduler::kMaxBatch), got B = " + std::to_string(batch));
  }
}

BatchScheduler::Outcome BatchScheduler::dispatch(std::size_t batch, detail::TaskBody& body,
                                                 std::chrono::steady_clock::time_point start) {
  if (detail::core_of(pool_).is_own_thread()) {
    throw Error(
        "BatchScheduler::run() called from a task of its own pool would wait for "
        "itself; run batches from other threads");
  }
  const std::size_t workers = pool_.size();
  const auto spin = pool_.options().idle_spin();
  Dispatch mode = Dispatch::allocated;
  Allocation allocation;
  std::size_t round = 0;
  {
    std::lock_guard lock(policy_.mutex());
    mode = policy_.dispatch();
    try {
      // A throwing allocate() leaves the policy's round as it was: so does the scheduler.
      if (mode == Dispatch::allocated) policy_.allocate(batch, allocation);
    } catch (const std::bad_alloc&) {
      detail::throw_out_of_memory(batch, "allocation");
    }
    round = ++rounds_;
    if (mode == Dispatch::allocated) {
      require_valid_allocation(policy_, allocation, batch, workers);
    }
  }

  std::shared_ptr<detail::BlockingBatch> job;
  try {
    job = std::make_shared<detail::BlockingBatch>(mode, batch, round, std::move(allocation),
                                                  workers, body);
    job->submit(detail::core_of(pool_));
  } catch (const std::bad_alloc&) {
    detail::throw_out_of_memory(batch, "task records");
  }
  job->wait(spin);
  // Nobody cancels a blocking batch: it succeeded or failed.
  if (job->outcome() == detail::Batch::Outcome::failed) {
    // Take the exception out: a worker may drop the last reference to this batch after we
    // return, and the exception must then die on this thread, where it is caught, not there.
    std::rethrow_exception(job->take_error());
  }

  Outcome outcome;
  try {
    job->collect(outcome.report, outcome.slot_order);
  } catch (const std::bad_alloc&) {
    detail::throw_out_of_memory(batch, "round report");
  }
  outcome.report.round = round;
  {
    std::lock_guard lock(policy_.mutex());
    try {
      // The one place where measured durations become the core's seconds.
      for (const TaskRecord& task : outcome.report.tasks) {
        if (task.accepted) {
          policy_.observe(task.worker, std::chrono::duration<double>(task.duration).count());
        }
      }
    } catch (...) {
      // The batch ran and its results are good: return them, and report the policy's failure.
      outcome.report.learning_error = std::current_exception();
    }
  }
  outcome.report.wall = std::chrono::steady_clock::now() - start;
  return outcome;
}

}  // namespace ata::runtime

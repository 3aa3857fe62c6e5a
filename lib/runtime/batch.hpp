#pragma once
// One batch in flight: its chunks on the workers, the per-worker logs of what ran, and the
// waiter's rendezvous. The engine of BatchScheduler::run().

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <stop_token>
#include <vector>

#include "ata/core/allocation.hpp"
#include "ata/core/policy.hpp"
#include "ata/runtime/detail/task_body.hpp"
#include "ata/runtime/round_report.hpp"
#include "runtime/pool_core.hpp"

namespace ata::runtime::detail {

using Clock = std::chrono::steady_clock;

class Batch final : public Chunk, public std::enable_shared_from_this<Batch> {
 public:
  // `allocation` is used in Dispatch::allocated mode only. `body` must outlive run_on().
  Batch(Dispatch mode, std::size_t batch, std::size_t round, Allocation allocation,
        std::size_t workers, TaskBody& body);

  // Call on a Batch owned by a std::shared_ptr. Hands one chunk to each worker with work and
  // returns once all of them have run or been abandoned, polling for up to `spin` before
  // sleeping. Throws ShutdownError if the pool refuses the batch, then rethrows the batch's
  // first error (a task's exception, or ShutdownError for an abandoned chunk).
  void run_on(PoolCore& pool, std::chrono::nanoseconds spin);

  // After run_on(): the report's allocation, busy times and task records, and the result
  // slots in task-index order (left empty when slot j holds task j).
  void collect(RoundReport& report, std::vector<std::size_t>& slot_order) const;

  void run(Worker& worker) noexcept override;
  void abandon(std::size_t worker, const std::exception_ptr& reason) noexcept override;

 private:
  static constexpr std::size_t kDiscarded = std::numeric_limits<std::size_t>::max();

  struct RanTask {
    std::size_t task;
    std::chrono::nanoseconds duration;
    std::size_t slot;  // where its result went, or kDiscarded
  };
  // One cache line each: every worker appends to its own log while the others do.
  struct alignas(64) WorkerLog {
    std::vector<RanTask> ran;
  };

  void run_allocated(Worker& worker, TaskContext& ctx);
  void run_pull(Worker& worker, TaskContext& ctx);
  void run_greedy(Worker& worker, TaskContext& ctx);
  // Runs task `task` and returns its duration, timed from `since`, which it then moves to the
  // task's end: one clock read per task. A task's time thus includes the scheduler's few
  // nanoseconds of bookkeeping before it. A task that throws is logged as discarded.
  std::chrono::nanoseconds run_task(Worker& worker, TaskContext& ctx, std::size_t task,
                                    Clock::time_point& since);
  void fail(std::exception_ptr error) noexcept;
  void finish_chunk() noexcept;

  const Dispatch mode_;
  const std::size_t batch_;
  const std::size_t round_;
  const Allocation allocation_;
  std::vector<std::size_t> first_task_;  // allocated mode: worker i runs [first, first + a_i)
  TaskBody& body_;
  std::stop_source stop_;
  std::atomic<std::size_t> next_task_{0};  // pull and greedy: the next task index to start
  std::atomic<std::size_t> accepted_{0};   // greedy: results accepted so far (may pass B)
  std::vector<WorkerLog> logs_;            // logs_[i] written by worker i only

  // Chunks not yet run or abandoned. The waiter polls it, then sleeps on finished_; the last
  // chunk notifies under mutex_, so the wake-up cannot slip between check and sleep.
  std::atomic<std::size_t> pending_chunks_{0};
  std::mutex mutex_;
  std::condition_variable finished_;
  std::exception_ptr error_;  // guarded by mutex_; the first failure wins
};

}  // namespace ata::runtime::detail

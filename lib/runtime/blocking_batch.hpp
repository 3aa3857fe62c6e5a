#pragma once
// The batch behind the blocking BatchScheduler::run(): its caller waits for on_complete().

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

#include "runtime/batch.hpp"

namespace ata::runtime::detail {

class BlockingBatch final : public Batch {
 public:
  using Batch::Batch;

  // Returns once the batch is complete, polling for up to `spin` before sleeping.
  void wait(std::chrono::nanoseconds spin);

 private:
  void on_complete() noexcept override;

  // The waiter polls done_, then sleeps on finished_; on_complete() notifies under mutex_, so
  // the wake-up cannot slip between check and sleep.
  std::atomic<bool> done_{false};
  std::mutex mutex_;
  std::condition_variable finished_;
};

}  // namespace ata::runtime::detail

#include "runtime/blocking_batch.hpp"

#include "runtime/spin.hpp"

namespace ata::runtime::detail {

void BlockingBatch::wait(std::chrono::nanoseconds spin) {
  const auto done = [&] { return done_.load(std::memory_order_acquire); };
  if (spin_until(done, spin)) return;
  std::unique_lock lock(mutex_);
  finished_.wait(lock, done);
}

void BlockingBatch::on_complete() noexcept {
  std::lock_guard lock(mutex_);
  done_.store(true, std::memory_order_release);
  finished_.notify_all();
}

}  // namespace ata::runtime::detail

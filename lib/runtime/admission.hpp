#pragma once
// The bound on a scheduler's batches in flight (backpressure). A batch enters before it is
// allocated and leaves when its outcome is final. Past the bound, callers wait in one FIFO:
// run() blocks in enter(), async_run() queues a callback, which leave() calls with the freed
// slot already handed over, so no later caller can overtake a waiting one.

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>

namespace ata::runtime::detail {

class Admission {
 public:
  using Ticket = std::uint64_t;

  // limit >= 1 (checked by SchedulerOptions).
  explicit Admission(std::size_t limit) : limit_(limit) {}

  // Blocks until the caller holds a slot.
  void enter();
  // Takes a slot now and returns nothing, or queues `on_admitted` and returns its ticket:
  // leave() calls it later, on the leaving thread, with the slot held by the waiter.
  std::optional<Ticket> enter_or_queue(std::function<void()> on_admitted);
  // Removes a queued waiter; false when it was already admitted (its callback runs or ran).
  bool withdraw(Ticket ticket);
  // Frees the caller's slot, or hands it to the oldest waiter. Never throws.
  void leave() noexcept;

  [[nodiscard]] std::size_t limit() const noexcept { return limit_; }
  // Slots held now. Thread-safe.
  [[nodiscard]] std::size_t in_flight() const;

 private:
  struct Waiter {
    Ticket ticket;
    std::function<void()> on_admitted;
  };

  const std::size_t limit_;
  mutable std::mutex mutex_;
  std::condition_variable admitted_;
  std::size_t in_flight_ = 0;   // guarded by mutex_
  std::deque<Waiter> waiters_;  // guarded by mutex_
  Ticket next_ticket_ = 0;      // guarded by mutex_
};

}  // namespace ata::runtime::detail

#pragma once
// Polling before blocking: a thread that sleeps on a condition variable takes tens of
// microseconds to wake (more on a virtual machine), longer than a whole batch of small tasks.

#include <chrono>
#include <thread>

namespace ata::runtime::detail {

// Polls `ready` for up to `budget`, yielding the core between polls so that a runnable
// thread (a worker with tasks) is not held up. Returns whether `ready` became true.
template <class Ready>
bool spin_until(Ready ready, std::chrono::nanoseconds budget) {
  if (ready()) return true;
  if (budget <= std::chrono::nanoseconds{0}) return false;
  const auto deadline = std::chrono::steady_clock::now() + budget;
  do {
    std::this_thread::yield();
    if (ready()) return true;
  } while (std::chrono::steady_clock::now() < deadline);
  return false;
}

}  // namespace ata::runtime::detail

#pragma once
// Polling for a condition in thread tests, bounded so that a deadlock fails the test, not CI.

#include <chrono>
#include <thread>

namespace ata::testing {

// Polls `condition` until it holds; false after `limit`.
template <class Condition>
bool eventually(Condition condition,
                std::chrono::milliseconds limit = std::chrono::milliseconds(10'000)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace ata::testing

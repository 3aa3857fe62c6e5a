#pragma once
// A task's sleep that its stop request cuts short: what tests use for a slow or stuck copy
// that the scheduler stops.

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "ata/runtime/task_context.hpp"

namespace ata::testing {

// Sleeps `delay`, or less when the task's stop is requested; true if it was stopped.
inline bool nap(const runtime::TaskContext& ctx, std::chrono::nanoseconds delay) {
  std::mutex mutex;
  std::condition_variable_any never;
  std::unique_lock lock(mutex);
  never.wait_for(lock, ctx.stop_token(), delay, [] { return false; });
  return ctx.stop_requested();
}

}  // namespace ata::testing

#pragma once
// A gate for thread tests: tasks wait on it until the test opens it or their stop is requested.

#include <condition_variable>
#include <mutex>

#include "ata/runtime/task_context.hpp"

namespace ata::testing {

class Gate {
 public:
  void wait(const runtime::TaskContext& ctx) {
    std::unique_lock lock(mutex_);
    opened_.wait(lock, ctx.stop_token(), [&] { return open_; });
  }
  void open() {
    {
      std::lock_guard lock(mutex_);
      open_ = true;
    }
    opened_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable_any opened_;
  bool open_ = false;
};

}  // namespace ata::testing

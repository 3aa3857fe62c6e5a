#pragma once
// Scheduler options for tests that count each task's calls, or time each task on its worker:
// the scheduler's default backup copies would add a call, on another worker, whenever a task
// runs late (as tasks of microseconds do on a loaded machine). The tests of backups set them
// themselves; the options product test and the stress test run the default.

#include "ata/core/backup_rule.hpp"
#include "ata/runtime/batch_options.hpp"

namespace ata::testing {

inline runtime::SchedulerOptions without_backups() {
  return runtime::SchedulerOptions{}.set_backups(BackupOptions{});
}

}  // namespace ata::testing

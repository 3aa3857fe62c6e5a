#include "ata/runtime/batch_options.hpp"

#include <string>

#include "ata/core/backup_rule.hpp"
#include "ata/core/error.hpp"
#include "core/checks.hpp"

namespace ata::runtime {

SchedulerOptions& SchedulerOptions::set_max_in_flight(std::size_t batches) {
  if (batches == 0) {
    throw InvalidArgument("max_in_flight must be >= 1 (batches in flight), got 0");
  }
  max_in_flight_ = batches;
  return *this;
}

SchedulerOptions& SchedulerOptions::set_backups(const BackupOptions& options) {
  [[maybe_unused]] const BackupRule validated(options);  // throws for bad settings
  backups_ = options;
  return *this;
}

SchedulerOptions& SchedulerOptions::set_stuck_after(double multiple) {
  if (!(multiple > 1.0)) {
    throw InvalidArgument("stuck_after must be > 1 (x the learned mean), got " +
                          ata::detail::to_text(multiple));
  }
  stuck_after_ = multiple;
  return *this;
}

}  // namespace ata::runtime

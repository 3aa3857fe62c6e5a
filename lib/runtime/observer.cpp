#include "ata/runtime/observer.hpp"

namespace ata::runtime {

const char* outcome_name(BatchOutcome outcome) noexcept {
  switch (outcome) {
    case BatchOutcome::succeeded: return "succeeded";
    case BatchOutcome::failed: return "failed";
    case BatchOutcome::cancelled: return "cancelled";
    case BatchOutcome::timed_out: return "timed_out";
  }
  return "failed";
}

}  // namespace ata::runtime

#pragma once
// What a BatchScheduler keeps besides its pool and policy: the in-flight bound, the deadline
// timer and the backlog buffer of load-aware allocation.

#include <cstddef>
#include <vector>

#include "runtime/admission.hpp"
#include "runtime/deadline_timer.hpp"

namespace ata::runtime::detail {

struct SchedulerEngine {
  explicit SchedulerEngine(std::size_t max_in_flight) : admission(max_in_flight) {}

  Admission admission;
  DeadlineTimer deadlines;
  std::vector<double> backlog;  // guarded by the policy's mutex
};

}  // namespace ata::runtime::detail

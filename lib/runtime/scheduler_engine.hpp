#pragma once
// What a BatchScheduler keeps besides its pool and policy: the in-flight bound, the deadline
// timer, the backlog buffer of load-aware allocation, the pacer of late binding and what the
// batches keep for the next ones.

#include <cstddef>
#include <memory>
#include <vector>

#include "ata/runtime/detail/batch_operation.hpp"
#include "runtime/admission.hpp"
#include "runtime/deadline_timer.hpp"
#include "runtime/lane_set.hpp"
#include "runtime/pacer.hpp"

namespace ata::runtime::detail {

struct SchedulerEngine {
  explicit SchedulerEngine(std::size_t max_in_flight) : admission(max_in_flight) {
    kept.reserve(kKept);
  }
  // The pacer may outlive the engine in a lane still running it: it lets go of the timer
  // before the timer goes.
  ~SchedulerEngine() {
    if (pacer) pacer->detach_timer();
  }
  SchedulerEngine(const SchedulerEngine&) = delete;
  SchedulerEngine& operator=(const SchedulerEngine&) = delete;

  Admission admission;
  DeadlineTimer deadlines;
  std::vector<double> backlog;   // guarded by the policy's mutex
  std::vector<double> means;     // guarded by the policy's mutex: scratch for the pacer
  std::shared_ptr<Pacer> pacer;  // late binding (LateBindingOptions)
  // Earlier batches' storage for the next ones. Guarded by the policy's mutex; at most kKept
  // (one per batch in flight, for a few at once), reserved: keeping never allocates.
  static constexpr std::size_t kKept = 4;
  std::vector<KeptStorage> kept;
  // Shared: a batch may outlive its scheduler (late copies of a batch that owns its task).
  std::shared_ptr<TrackedStateCache> tracked_states = std::make_shared<TrackedStateCache>();
};

}  // namespace ata::runtime::detail

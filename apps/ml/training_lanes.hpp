#pragma once
// The lanes a training run dispatches to, of the kind --lanes names, with what they run on:
// threads of a WorkerPool, io_contexts each run by a thread of its own, or oneTBB arenas.
// Boost.Asio and oneTBB stay inside training_lanes.cpp.

#include <memory>
#include <string>

#include "ata/runtime/lanes.hpp"
#include "training.hpp"

namespace ata::ml {

/// The workers of config as lanes: worker i delayed as config.scenario's worker i says (unless
/// config.simulated_delays is false), running each task config.work_factors[i] times, pinned to
/// config.cpus[i]. Threads pin with PoolOptions::set_cpu; an io_context's thread is pinned when
/// it starts; an arena's threads are pinned on entering it (a tbb::task_scheduler_observer) and
/// given back their previous CPUs on leaving.
///
/// @code
/// TrainingLanes lanes(config);
/// ata::runtime::BatchScheduler scheduler(lanes.lanes(), policy);
/// @endcode
///
/// Not synchronised: build and destroy it on one thread; lanes() is a runtime::Lanes, with
/// its thread-safety.
class TrainingLanes {
 public:
  /// Throws ata::InvalidArgument for lists of the wrong length or a CPU the process may not use,
  /// and ata::Error when a thread cannot be started or pinned.
  explicit TrainingLanes(const TrainingConfig& config);
  ~TrainingLanes();
  TrainingLanes(const TrainingLanes&) = delete;
  TrainingLanes& operator=(const TrainingLanes&) = delete;

  [[nodiscard]] runtime::Lanes& lanes() noexcept;
  /// Throws ata::Error if a thread entering an arena could not be pinned (oneTBB lanes pin
  /// while they run, where no exception can be thrown). Call it after the batches.
  void check_pinned() const;

  struct Parts;  // per kind, in training_lanes.cpp

 private:
  std::unique_ptr<Parts> parts_;
};

/// What lanes of `config` are, for the run's header: e.g. "4 Asio io_contexts, one thread each,
/// pinned to CPUs 0,0,0,1; work factors 1,1,1,2".
[[nodiscard]] std::string describe_lanes(const TrainingConfig& config);

}  // namespace ata::ml

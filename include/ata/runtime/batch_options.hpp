#pragma once
/// @file
/// Options of a BatchScheduler (backpressure, load awareness) and of one batch (deadline).

#include <chrono>
#include <cstddef>

#include "ata/core/error.hpp"

namespace ata::runtime {

/// How a BatchScheduler treats concurrent batches, with fluent setters.
///
/// @code
/// ata::runtime::BatchScheduler scheduler(
///     pool, policy, ata::runtime::SchedulerOptions{}.set_max_in_flight(16).set_load_aware(true));
/// @endcode
///
/// A value type; not synchronised.
class SchedulerOptions {
 public:
  /// The default bound on batches in flight.
  static constexpr std::size_t kDefaultMaxInFlight = 64;

  /// Batches allocated and not yet complete, at most (>= 1, else ata::InvalidArgument). Past
  /// it, run() blocks and async_run() waits asynchronously for a slot, first come first
  /// served, so the memory batches hold stays bounded whatever the request rate.
  SchedulerOptions& set_max_in_flight(std::size_t batches) {
    if (batches == 0) {
      throw InvalidArgument("max_in_flight must be >= 1 (batches in flight), got 0");
    }
    max_in_flight_ = batches;
    return *this;
  }
  /// Whether an allocated batch is allocated against the tasks already queued or running on
  /// each worker (on by default): the policy minimises max_i (q_i + a_i s_i), q_i being
  /// worker i's unfinished tasks of earlier allocated batches times its score. With one batch
  /// at a time every q_i is 0 and the allocation is the plain one.
  SchedulerOptions& set_load_aware(bool on) noexcept {
    load_aware_ = on;
    return *this;
  }

  [[nodiscard]] std::size_t max_in_flight() const noexcept { return max_in_flight_; }
  [[nodiscard]] bool load_aware() const noexcept { return load_aware_; }

 private:
  std::size_t max_in_flight_ = kDefaultMaxInFlight;
  bool load_aware_ = true;
};

/// Options of one batch.
struct BatchOptions {
  /// Measured from the call. Zero: none. Past it, the batch's running tasks get a stop
  /// request, its queued chunks are skipped, and it fails: run() throws DeadlineError,
  /// async_run() completes with boost::asio::error::timed_out. A batch whose B results are
  /// all in by then succeeds. The policy learns nothing from a batch that timed out or was
  /// cancelled: the tasks that had finished are the fast ones, a biased sample.
  std::chrono::nanoseconds deadline{0};
};

/// What run() throws when a batch's deadline passes first.
class DeadlineError : public Error {
 public:
  using Error::Error;
};

}  // namespace ata::runtime

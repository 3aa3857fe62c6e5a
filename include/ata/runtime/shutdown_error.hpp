#pragma once
/// @file
/// The error a batch fails with when its worker pool shuts down before running it.

#include "ata/core/error.hpp"

namespace ata::runtime {

/// Thrown to the waiter of a batch whose work was still queued when the pool shut down, and by
/// every submission to a pool that has shut down. Work never disappears silently.
///
/// @code
/// ata::runtime::WorkerPool pool(2);
/// ata::UniformPolicy policy(2);
/// ata::runtime::BatchScheduler scheduler(pool, policy);
/// pool.shutdown();
/// try {
///   scheduler.run(4, [](const ata::runtime::TaskContext&) {});
/// } catch (const ata::runtime::ShutdownError& e) {
///   // "worker pool is shut down: ..."
/// }
/// @endcode
class ShutdownError : public Error {
 public:
  using Error::Error;
};

}  // namespace ata::runtime

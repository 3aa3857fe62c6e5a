#pragma once
// Fault injection for the runtime tests: the test binary replaces the global operator new, and
// a scope armed on the calling thread counts its allocations or makes them fail. Other threads
// (the pool's workers) are never affected.

#include <cstddef>

namespace ata::testing {

class AllocationFaults {
 public:
  // Counts the calling thread's allocations while in scope; `fail_at` >= 0 makes the
  // allocation of that index (0-based) throw std::bad_alloc, `fail_all` every one.
  static AllocationFaults count() noexcept { return AllocationFaults(-1, false); }
  static AllocationFaults fail_at(long index) noexcept { return AllocationFaults(index, false); }
  static AllocationFaults fail_all() noexcept { return AllocationFaults(-1, true); }

  AllocationFaults(const AllocationFaults&) = delete;
  AllocationFaults& operator=(const AllocationFaults&) = delete;
  ~AllocationFaults();

  // Allocations attempted so far in this scope, failed ones included.
  [[nodiscard]] long allocations() const noexcept;
  // Whether an allocation was made to fail.
  [[nodiscard]] bool failed() const noexcept;

 private:
  AllocationFaults(long fail_at, bool fail_all) noexcept;
};

}  // namespace ata::testing

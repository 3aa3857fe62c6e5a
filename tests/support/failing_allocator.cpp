#include "support/failing_allocator.hpp"

#include <cstdlib>
#include <new>

namespace {

// Per thread; constant-initialised, so usable from operator new at any time.
struct Faults {
  bool armed = false;
  bool fail_all = false;
  long fail_at = -1;
  long seen = 0;
  bool failed = false;
};
thread_local Faults faults;

void* allocate(std::size_t size, std::size_t alignment) {
  if (faults.armed) {
    const long index = faults.seen++;
    if (faults.fail_all || index == faults.fail_at) {
      faults.failed = true;
      throw std::bad_alloc();
    }
  }
  if (size == 0) size = 1;
  void* p = alignment <= alignof(std::max_align_t)
                ? std::malloc(size)
                : std::aligned_alloc(alignment, (size + alignment - 1) / alignment * alignment);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

}  // namespace

namespace ata::testing {

AllocationFaults::AllocationFaults(long fail_at, bool fail_all) noexcept {
  faults = Faults{true, fail_all, fail_at, 0, false};
}

AllocationFaults::~AllocationFaults() { faults.armed = false; }

long AllocationFaults::allocations() const noexcept { return faults.seen; }

bool AllocationFaults::failed() const noexcept { return faults.failed; }

}  // namespace ata::testing

// Every form the library and the tests use; each delete matches malloc/aligned_alloc.
void* operator new(std::size_t size) { return allocate(size, 0); }
void* operator new[](std::size_t size) { return allocate(size, 0); }
void* operator new(std::size_t size, std::align_val_t a) {
  return allocate(size, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t size, std::align_val_t a) {
  return allocate(size, static_cast<std::size_t>(a));
}
// The nothrow forms too: left to the runtime's, they would pair its allocator with our free()
// (AddressSanitizer reports the mismatch).
namespace {
void* allocate_or_null(std::size_t size, std::size_t alignment) noexcept {
  try {
    return allocate(size, alignment);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}
}  // namespace
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  return allocate_or_null(size, 0);
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
  return allocate_or_null(size, 0);
}
void* operator new(std::size_t size, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocate_or_null(size, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t size, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocate_or_null(size, static_cast<std::size_t>(a));
}
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

#include "runtime/asymmetric_fence.hpp"

#if defined(__linux__)
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace ata::runtime::detail {

namespace {

#if defined(__linux__) && defined(__NR_membarrier)
long membarrier(int command) { return syscall(__NR_membarrier, command, 0, 0); }
#endif

}  // namespace

const AsymmetricFence& AsymmetricFence::instance() {
  static const AsymmetricFence fence;
  return fence;
}

AsymmetricFence::AsymmetricFence() {
#if defined(__linux__) && defined(__NR_membarrier)
  const long supported = membarrier(MEMBARRIER_CMD_QUERY);
  membarrier_ = supported > 0 && (supported & MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0 &&
                membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
#endif
}

bool AsymmetricFence::heavy_store_load(std::atomic_ref<std::uint8_t> flag,
                                       std::atomic_ref<std::uint8_t> other,
                                       std::uint8_t set) const noexcept {
  (void)flag.exchange(set, std::memory_order_seq_cst);
  heavy_barrier();
  return other.load(std::memory_order_seq_cst) == set;
}

void AsymmetricFence::heavy_barrier() const noexcept {
#if defined(__linux__) && defined(__NR_membarrier)
  // Registered at construction, so it cannot fail.
  if (membarrier_) (void)membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED);
#endif
}

}  // namespace ata::runtime::detail

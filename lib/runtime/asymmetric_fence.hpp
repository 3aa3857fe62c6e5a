#pragma once
// A store-load barrier split unevenly between two sides: the frequent side (a lane claiming
// the result of a task it ran) pays a compiler barrier, the rare side (a lane starting a
// backup copy of that task) a membarrier(2) system call that makes every thread of the
// process pass a full barrier. Either side then sees the other's store, as with a fence on
// both. Where the kernel lacks membarrier, both sides use seq_cst read-modify-writes (or
// fences) instead.

#include <atomic>
#include <cstdint>

namespace ata::runtime::detail {

class AsymmetricFence {
 public:
  // Registers the process for expedited membarriers, once; thread-safe.
  static const AsymmetricFence& instance();

  // The frequent side: `flag` set to `set`, then `other` read; whether `other` was set (holds
  // `set`: a flag holding any other value is clear).
  [[nodiscard]] bool light_store_load(std::atomic_ref<std::uint8_t> flag,
                                      std::atomic_ref<std::uint8_t> other,
                                      std::uint8_t set = 1) const noexcept {
    if (membarrier_) {
      flag.store(set, std::memory_order_relaxed);
      std::atomic_signal_fence(std::memory_order_seq_cst);
      return other.load(std::memory_order_relaxed) == set;
    }
    (void)flag.exchange(set, std::memory_order_seq_cst);
    return other.load(std::memory_order_seq_cst) == set;
  }
  // The same barriers for other variables: each side stores, passes its barrier, then loads.
  void light_barrier() const noexcept {
    if (membarrier_) {
      std::atomic_signal_fence(std::memory_order_seq_cst);
    } else {
      std::atomic_thread_fence(std::memory_order_seq_cst);
    }
  }
  void heavy_barrier() const noexcept;
  // The rare side: `flag` set to `set`, then `other` read; whether `other` was set.
  [[nodiscard]] bool heavy_store_load(std::atomic_ref<std::uint8_t> flag,
                                      std::atomic_ref<std::uint8_t> other,
                                      std::uint8_t set = 1) const noexcept;

 private:
  AsymmetricFence();
  bool membarrier_ = false;
};

}  // namespace ata::runtime::detail

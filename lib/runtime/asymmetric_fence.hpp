#pragma once
// A store-load barrier split unevenly between two sides: the frequent side (a lane claiming
// the result of a task it ran) pays a compiler barrier, the rare side (a lane starting a
// backup copy of that task) a membarrier(2) system call that makes every thread of the
// process pass a full barrier. Either side then sees the other's store, as with a fence on
// both. Where the kernel lacks membarrier, both sides use seq_cst read-modify-writes instead.

#include <atomic>
#include <cstddef>
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
  // The rare side: `flag` set to `set`, then `other` read; whether `other` was set.
  [[nodiscard]] bool heavy_store_load(std::atomic_ref<std::uint8_t> flag,
                                      std::atomic_ref<std::uint8_t> other,
                                      std::uint8_t set = 1) const noexcept;

  // The same two sides for words: `mine` set to `value`, then `other` read and returned.
  [[nodiscard]] std::size_t light_store_load(std::atomic<std::size_t>& mine, std::size_t value,
                                             const std::atomic<std::size_t>& other) const noexcept {
    if (membarrier_) {
      mine.store(value, std::memory_order_relaxed);
      std::atomic_signal_fence(std::memory_order_seq_cst);
      return other.load(std::memory_order_relaxed);
    }
    (void)mine.exchange(value, std::memory_order_seq_cst);
    return other.load(std::memory_order_seq_cst);
  }
  [[nodiscard]] std::size_t heavy_store_load(std::atomic<std::size_t>& mine, std::size_t value,
                                             const std::atomic<std::size_t>& other) const noexcept {
    (void)mine.exchange(value, std::memory_order_seq_cst);
    heavy_barrier();
    return other.load(std::memory_order_seq_cst);
  }

 private:
  AsymmetricFence();
  // The membarrier, where the kernel has it.
  void heavy_barrier() const noexcept;
  bool membarrier_ = false;
};

}  // namespace ata::runtime::detail

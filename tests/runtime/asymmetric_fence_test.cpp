#include "runtime/asymmetric_fence.hpp"

#include <atomic>
#include <catch2/catch_test_macros.hpp>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

using ata::runtime::detail::AsymmetricFence;

namespace {

constexpr int kRounds = 20000;

// The store-buffering litmus test: in each round each side sets its flag and reads the
// other's, `light(k)` and `heavy(k)` returning whether they saw it, at the same moment. With a
// store-load barrier on both sides, at least one sees the other's flag in every round; with
// none, x86 lets both read 0 now and then. Returns the rounds where neither did.
template <class Light, class Heavy>
int rounds_where_neither_saw(Light light, Heavy heavy) {
  std::vector<std::uint8_t> light_saw(kRounds, 0);
  std::vector<std::uint8_t> heavy_saw(kRounds, 0);
  std::atomic<int> go{-1};
  std::atomic<int> done{0};
  std::jthread rare([&] {
    for (int k = 0; k < kRounds; ++k) {
      while (go.load(std::memory_order_acquire) < k) {
      }
      heavy_saw[k] = heavy(k) ? 1 : 0;
      done.fetch_add(1, std::memory_order_acq_rel);
    }
  });
  for (int k = 0; k < kRounds; ++k) {
    go.store(k, std::memory_order_release);
    light_saw[k] = light(k) ? 1 : 0;
    while (done.load(std::memory_order_acquire) <= k) {
    }
  }
  rare.join();
  int neither = 0;
  for (int k = 0; k < kRounds; ++k) neither += (light_saw[k] == 0 && heavy_saw[k] == 0) ? 1 : 0;
  return neither;
}

}  // namespace

TEST_CASE("an asymmetric store-load handshake: at least one side sees the other",
          "[runtime][fence]") {
  const AsymmetricFence& fence = AsymmetricFence::instance();
  std::vector<std::uint8_t> light(kRounds, 0);  // as the batch's flags: bytes, std::atomic_ref
  std::vector<std::uint8_t> heavy(kRounds, 0);
  CHECK(rounds_where_neither_saw(
            [&](int k) {
              return fence.light_store_load(std::atomic_ref(light[k]), std::atomic_ref(heavy[k]));
            },
            [&](int k) {
              return fence.heavy_store_load(std::atomic_ref(heavy[k]), std::atomic_ref(light[k]));
            }) == 0);
}

TEST_CASE("an asymmetric store-load handshake on words", "[runtime][fence]") {
  // As a lane and the caller lane taking the rest of its chunk over: each stores its own word
  // (the task it starts, the end it lowers) and loads the other's.
  const AsymmetricFence& fence = AsymmetricFence::instance();
  std::vector<std::atomic<std::size_t>> started(kRounds);
  std::vector<std::atomic<std::size_t>> limit(kRounds);
  CHECK(rounds_where_neither_saw(
            [&](int k) { return fence.light_store_load(started[k], 1, limit[k]) == 1; },
            [&](int k) { return fence.heavy_store_load(limit[k], 1, started[k]) == 1; }) == 0);
}

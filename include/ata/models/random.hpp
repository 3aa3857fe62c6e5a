#pragma once
/// @file
/// The random numbers of the simulator and of the runtime's slowdowns: a small, fast generator
/// with independent streams, so each worker draws its own sequence and a seed reproduces a run
/// bit for bit on any platform.

#include <cstdint>
#include <limits>

namespace ata::models {

/// xoshiro256** (Blackman and Vigna), seeded through SplitMix64. 32 bytes of state, so a
/// simulator can give every worker its own stream: worker i's u-th task time is then the same
/// whichever strategy runs, and strategies are compared on common random numbers.
/// Satisfies std::uniform_random_bit_generator. Not thread-safe: one generator per thread.
class Rng {
 public:
  using result_type = std::uint64_t;

  /// Stream `stream` of run `seed`; different (seed, stream) pairs give unrelated sequences.
  explicit Rng(std::uint64_t seed = 0, std::uint64_t stream = 0) noexcept;

  static constexpr result_type min() noexcept { return 0; }
  static constexpr result_type max() noexcept { return std::numeric_limits<result_type>::max(); }

  result_type operator()() noexcept {
    const std::uint64_t result = rotl(state_[1] * 5, 7) * 9;
    const std::uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = rotl(state_[3], 45);
    return result;
  }

 private:
  static constexpr std::uint64_t rotl(std::uint64_t x, int k) noexcept {
    return (x << k) | (x >> (64 - k));
  }

  std::uint64_t state_[4];
};

/// A uniform double in [0, 1) from the top 53 bits of one draw.
[[nodiscard]] inline double uniform01(Rng& rng) noexcept {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

/// A standard normal draw (Box-Muller; two uniforms per value).
[[nodiscard]] double standard_normal(Rng& rng) noexcept;

}  // namespace ata::models

#pragma once
// The core's own random numbers, for ata-auto's posterior draws: the core must not depend on the
// models' generator, ata::models::Rng (layers depend only downwards). The whole generator is one 64-bit word
// the caller owns, so a policy needs no extra allocation, and a seed gives the same draws on
// every platform with IEEE doubles.

#include <array>
#include <cmath>
#include <cstdint>

namespace ata::detail {

/// SplitMix64 (Steele, Lea and Flood 2014): advances `state` and returns 64 random bits. Passes
/// BigCrush; every seed, 0 included, is a good one.
inline std::uint64_t splitmix64(std::uint64_t& state) noexcept {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/// Uniform on (0, 1): never 0, so its logarithm is finite.
inline double uniform_open(std::uint64_t& state) noexcept {
  return (static_cast<double>(splitmix64(state) >> 11) + 0.5) * 0x1.0p-53;
}

/// The ziggurat's 128 layers (Marsaglia and Tsang 2000): layer i spans [0, edge[i]], and a
/// point with |x| < edge[i + 1] lies under the density for sure. Layer 0 is the base strip,
/// whose width also pays for the tail beyond edge[1] = 3.4426...
struct Ziggurat {
  static constexpr int kLayers = 128;
  std::array<double, kLayers + 1> edge{};
  std::array<double, kLayers + 1> height{};  // exp(-edge^2 / 2), the base strip's top for i = 0
};
/// Computed before main() (no function-local guard on the hot path).
extern const Ziggurat kZiggurat;

/// The rare paths of standard_normal(): the wedges and the tail, exact.
double standard_normal_slow(std::uint64_t& state, std::uint64_t bits) noexcept;

/// A standard normal draw by the ziggurat method, with the layer index and the value taken from
/// different bits of one 64-bit draw (Doornik 2005: sharing them correlates successive draws).
/// About 99% of draws cost one generator call, a table look-up and a multiplication.
inline double standard_normal(std::uint64_t& state) noexcept {
  const std::uint64_t bits = splitmix64(state);
  const auto layer = static_cast<int>(bits & (Ziggurat::kLayers - 1));
  // The top 53 bits as a uniform on [-1, 1).
  const double x = static_cast<double>(static_cast<std::int64_t>(bits) >> 11) * 0x1.0p-52 *
                   kZiggurat.edge[layer];
  if (std::abs(x) < kZiggurat.edge[layer + 1]) return x;
  return standard_normal_slow(state, bits);
}

/// A draw of X standard normal conditioned on X > r (r > 0), exactly (Marsaglia 1964):
/// the tail sampler of the ziggurat, for any r.
inline double normal_tail(std::uint64_t& state, double r) noexcept {
  double a = 0.0;
  double b = 0.0;
  do {
    a = -std::log(uniform_open(state)) / r;
    b = -std::log(uniform_open(state));
  } while (b + b < a * a);
  return r + a;
}

}  // namespace ata::detail

#include "ata/models/random.hpp"

#include <cmath>
#include <numbers>

namespace ata::models {

namespace {

std::uint64_t splitmix64(std::uint64_t& x) noexcept {
  std::uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

Rng::Rng(std::uint64_t seed, std::uint64_t stream) noexcept {
  // Mix the stream in through a second SplitMix64 round so nearby streams are unrelated.
  std::uint64_t mixer = seed;
  std::uint64_t x = splitmix64(mixer) ^ (stream * 0xd1b54a32d192ed03ULL + 0x8cb92ba72f3d8dd7ULL);
  for (auto& word : state_) word = splitmix64(x);
}

double standard_normal(Rng& rng) noexcept {
  const double u1 = 1.0 - uniform01(rng);  // (0, 1]: the log is finite
  const double u2 = uniform01(rng);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

}  // namespace ata::models

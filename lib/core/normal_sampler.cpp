#include "core/normal_sampler.hpp"

namespace ata::detail {

namespace {

constexpr double kTailStart = 3.442619855899;       // r: where the base layer's tail begins
constexpr double kLayerArea = 9.91256303526217e-3;  // V: the area of every layer

double density(double x) { return std::exp(-0.5 * x * x); }  // unnormalised

Ziggurat make_ziggurat() {
  Ziggurat z;
  z.edge[0] = kLayerArea / density(kTailStart);
  z.edge[1] = kTailStart;
  // Layer i has area edge[i] * (density(edge[i + 1]) - density(edge[i])) = V.
  for (int i = 1; i < Ziggurat::kLayers - 1; ++i) {
    z.edge[i + 1] = std::sqrt(-2.0 * std::log(kLayerArea / z.edge[i] + density(z.edge[i])));
  }
  z.edge[Ziggurat::kLayers] = 0.0;
  for (int i = 0; i <= Ziggurat::kLayers; ++i) z.height[i] = density(z.edge[i]);
  z.height[0] = density(kTailStart);
  return z;
}

}  // namespace

const Ziggurat kZiggurat = make_ziggurat();

double standard_normal_slow(std::uint64_t& state, std::uint64_t bits) noexcept {
  for (;;) {
    const auto layer = static_cast<int>(bits & (Ziggurat::kLayers - 1));
    const double u = static_cast<double>(static_cast<std::int64_t>(bits) >> 11) * 0x1.0p-52;
    const double x = u * kZiggurat.edge[layer];
    if (std::abs(x) < kZiggurat.edge[layer + 1]) return x;
    if (layer == 0) {
      // The tail beyond r, taken with probability ~3e-4 per draw.
      const double tail = normal_tail(state, kTailStart);
      return u < 0.0 ? -tail : tail;
    }
    // The wedge between the layer's rectangle and the curve.
    const double y = kZiggurat.height[layer] +
                     uniform_open(state) * (kZiggurat.height[layer + 1] - kZiggurat.height[layer]);
    if (y < density(x)) return x;
    bits = splitmix64(state);
  }
}

}  // namespace ata::detail

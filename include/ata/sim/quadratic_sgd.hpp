#pragma once
/// @file
/// Minibatch SGD on the paper's quadratic, for the simulator's optimisation panels.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "ata/models/random.hpp"

namespace ata::sim {

/// f(x) = 1/2 x'Ax - b'x with A = (1/4) tridiag(-1, 2, -1), b = -(1/4) e_1, from
/// x0 = sqrt(d) e_1; each stochastic gradient is Ax - b + N(0, noise^2 I).
///
/// A step averages B stochastic gradients taken at the current point. Their noise terms are
/// i.i.d., so their average is drawn directly as N(0, noise^2 / B I): the same law as B draws,
/// at the cost of one.
///
/// @code
/// ata::sim::QuadraticSgd sgd(/*dim=*/100, /*step=*/1e-4, /*noise=*/1e-3, /*seed=*/1);
/// sgd.step(/*batch=*/23);
/// double gap = sgd.suboptimality();   // f(x) - f*
/// @endcode
///
/// Not thread-safe.
class QuadraticSgd {
 public:
  /// Throws ata::InvalidArgument for dim = 0, step not finite and > 0, noise not finite and >= 0.
  QuadraticSgd(std::size_t dim, double step, double noise, std::uint64_t seed);

  /// One SGD step with the average of `batch` (>= 1) stochastic gradients.
  void step(std::size_t batch);
  /// One stochastic gradient at the current point (noise N(0, noise^2 I)) into `out`, of size
  /// dim(); the asynchronous stream computes it when a task starts and applies it later.
  void stochastic_gradient(std::span<double> out);
  /// x -= step g: applies a gradient computed at this or an earlier point.
  void apply(std::span<const double> gradient);
  [[nodiscard]] std::size_t dim() const noexcept { return x_.size(); }
  /// f(x) - f*, f* computed exactly (tridiagonal solve).
  [[nodiscard]] double suboptimality() const;
  [[nodiscard]] const std::vector<double>& point() const noexcept { return x_; }

 private:
  [[nodiscard]] double value(const std::vector<double>& x) const;
  void gradient_into(std::span<double> out, double spread);

  double step_;
  double noise_;
  std::vector<double> x_;
  std::vector<double> gradient_;
  double optimum_ = 0.0;
  models::Rng rng_;
};

}  // namespace ata::sim

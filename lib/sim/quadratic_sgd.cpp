#include "ata/sim/quadratic_sgd.hpp"

#include <cmath>
#include <string>

#include "ata/core/error.hpp"
#include "core/checks.hpp"

namespace ata::sim {

namespace {

constexpr double kB1 = -0.25;  // b = -(1/4) e_1

// (Ax)_j = (2 x_j - x_{j-1} - x_{j+1}) / 4
double a_times(const std::vector<double>& x, std::size_t j) {
  const double left = j > 0 ? x[j - 1] : 0.0;
  const double right = j + 1 < x.size() ? x[j + 1] : 0.0;
  return 0.25 * (2.0 * x[j] - left - right);
}

// Solves A x = b with the Thomas algorithm (A is tridiagonal and positive definite).
std::vector<double> minimiser(std::size_t d) {
  std::vector<double> c(d, 0.0);
  std::vector<double> rhs(d, 0.0);
  rhs[0] = kB1;
  const double diag = 0.5;
  const double off = -0.25;
  c[0] = off / diag;
  rhs[0] = rhs[0] / diag;
  for (std::size_t j = 1; j < d; ++j) {
    const double m = diag - off * c[j - 1];
    c[j] = off / m;
    rhs[j] = (rhs[j] - off * rhs[j - 1]) / m;
  }
  std::vector<double> x(d);
  x[d - 1] = rhs[d - 1];
  for (std::size_t j = d - 1; j-- > 0;) x[j] = rhs[j] - c[j] * x[j + 1];
  return x;
}

}  // namespace

QuadraticSgd::QuadraticSgd(std::size_t dim, double step, double noise, std::uint64_t seed)
    : step_(step), noise_(noise), rng_(seed, 0x5eed) {
  if (dim == 0) throw InvalidArgument("SGD dimension must be >= 1, got 0");
  detail::require_positive(step, "SGD step size");
  detail::require_non_negative(noise, "SGD gradient noise");
  x_.assign(dim, 0.0);
  x_[0] = std::sqrt(static_cast<double>(dim));
  gradient_.resize(dim);
  optimum_ = value(minimiser(dim));
}

double QuadraticSgd::value(const std::vector<double>& x) const {
  double quadratic = 0.0;
  for (std::size_t j = 0; j < x.size(); ++j) quadratic += x[j] * a_times(x, j);
  return 0.5 * quadratic - kB1 * x[0];
}

void QuadraticSgd::gradient_into(std::span<double> out, double spread) {
  for (std::size_t j = 0; j < x_.size(); ++j) {
    out[j] = a_times(x_, j) - (j == 0 ? kB1 : 0.0) + spread * models::standard_normal(rng_);
  }
}

void QuadraticSgd::step(std::size_t batch) {
  if (batch < 1) throw InvalidArgument("batch size B must be >= 1, got 0");
  gradient_into(gradient_, noise_ / std::sqrt(static_cast<double>(batch)));
  apply(gradient_);
}

void QuadraticSgd::stochastic_gradient(std::span<double> out) {
  if (out.size() != x_.size()) {
    throw InvalidArgument("a gradient of the quadratic has " + std::to_string(x_.size()) +
                          " coordinates, got room for " + std::to_string(out.size()));
  }
  gradient_into(out, noise_);
}

void QuadraticSgd::apply(std::span<const double> gradient) {
  if (gradient.size() != x_.size()) {
    throw InvalidArgument("a gradient of the quadratic has " + std::to_string(x_.size()) +
                          " coordinates, got " + std::to_string(gradient.size()));
  }
  for (std::size_t j = 0; j < x_.size(); ++j) x_[j] -= step_ * gradient[j];
}

double QuadraticSgd::suboptimality() const { return value(x_) - optimum_; }

}  // namespace ata::sim

#include "problems.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "app_support.hpp"
#include "ata/core/error.hpp"

namespace ata::ml {

namespace {

double dot(std::span<const double> a, std::span<const double> b) {
  double s = 0.0;
  for (std::size_t j = 0; j < a.size(); ++j) s += a[j] * b[j];
  return s;
}

double sigmoid(double t) { return t >= 0.0 ? 1.0 / (1.0 + std::exp(-t)) : std::exp(t) / (1.0 + std::exp(t)); }

// log(1 + exp(-t)) without overflow.
double logistic_loss(double t) { return t > 0.0 ? std::log1p(std::exp(-t)) : -t + std::log1p(std::exp(t)); }

// Solves M z = r for a symmetric positive definite d x d M (row-major) by Cholesky.
std::vector<double> solve_spd(std::vector<double> m, std::vector<double> r) {
  const std::size_t d = r.size();
  for (std::size_t j = 0; j < d; ++j) {
    double diag = m[j * d + j];
    for (std::size_t k = 0; k < j; ++k) diag -= m[j * d + k] * m[j * d + k];
    if (diag <= 0.0) throw Error("matrix is not positive definite");
    const double l = std::sqrt(diag);
    m[j * d + j] = l;
    for (std::size_t i = j + 1; i < d; ++i) {
      double v = m[i * d + j];
      for (std::size_t k = 0; k < j; ++k) v -= m[i * d + k] * m[j * d + k];
      m[i * d + j] = v / l;
    }
  }
  for (std::size_t i = 0; i < d; ++i) {  // L y = r
    for (std::size_t k = 0; k < i; ++k) r[i] -= m[i * d + k] * r[k];
    r[i] /= m[i * d + i];
  }
  for (std::size_t i = d; i-- > 0;) {  // L' z = y
    for (std::size_t k = i + 1; k < d; ++k) r[i] -= m[k * d + i] * r[k];
    r[i] /= m[i * d + i];
  }
  return r;
}

std::size_t draw_index(models::Rng& rng, std::size_t count) {
  return static_cast<std::size_t>(models::uniform01(rng) * static_cast<double>(count));
}

}  // namespace

void Problem::stochastic_prox(std::span<const double>, double, models::Rng&,
                              std::span<double>) const {
  throw Error("problem '" + describe() + "' has no stochastic prox");
}

// ---- the paper's quadratic ------------------------------------------------------------------

QuadraticProblem::QuadraticProblem(std::size_t dim, double noise) : dim_(dim), noise_(noise) {
  if (dim == 0) throw InvalidArgument("quadratic dimension must be >= 1, got 0");
  if (!std::isfinite(noise) || noise < 0.0) throw InvalidArgument("gradient noise must be finite and >= 0");
  // In closed form, so the dimension costs no d x d matrix: f* = -b'A^{-1}b / 2 with
  // b = -(1/4) e_1 and A = T / 4, T = tridiag(-1, 2, -1), whose (T^{-1})_11 = d / (d + 1);
  // hence f* = -(1/32) * 4 d / (d + 1) = -d / (8 (d + 1)).
  const auto d = static_cast<double>(dim);
  optimal_loss_ = -d / (8.0 * (d + 1.0));
}

std::string QuadraticProblem::describe() const {
  return "paper's quadratic, d = " + std::to_string(dim_) + ", gradient noise " + std::to_string(noise_);
}

std::vector<double> QuadraticProblem::initial_point() const {
  std::vector<double> x(dim_, 0.0);
  x[0] = std::sqrt(static_cast<double>(dim_));
  return x;
}

namespace {
// (Ax)_j for A = (1/4) tridiag(-1, 2, -1)
double tridiagonal_row(std::span<const double> x, std::size_t j) {
  const double left = j > 0 ? x[j - 1] : 0.0;
  const double right = j + 1 < x.size() ? x[j + 1] : 0.0;
  return 0.25 * (2.0 * x[j] - left - right);
}
}  // namespace

double QuadraticProblem::loss(std::span<const double> x) const {
  double quadratic = 0.0;
  for (std::size_t j = 0; j < x.size(); ++j) quadratic += x[j] * tridiagonal_row(x, j);
  return 0.5 * quadratic + 0.25 * x[0];
}

void QuadraticProblem::stochastic_gradient(std::span<const double> x, models::Rng& rng,
                                           std::span<double> out) const {
  for (std::size_t j = 0; j < dim_; ++j) {
    out[j] = tridiagonal_row(x, j) + (j == 0 ? 0.25 : 0.0) + noise_ * models::standard_normal(rng);
  }
}

// ---- finite sums ------------------------------------------------------------------------------

FiniteSumProblem::FiniteSumProblem(Dataset data, const std::string& kind, const std::string& name,
                                   const std::string& details)
    : data_(std::move(data)),
      description_(kind + " on " + name + " (" + std::to_string(data_.rows) + " x " + std::to_string(data_.cols) +
                   details + ")") {
  if (data_.rows == 0 || data_.cols == 0) throw InvalidArgument("dataset '" + name + "' is empty");
  // Computing f* exactly takes a d x d matrix (the Hessian, or the normal equations).
  apps::require_memory(kind + " on " + name + ": " + std::to_string(data_.cols) + " features (a " +
                           std::to_string(data_.cols) + " x " + std::to_string(data_.cols) +
                           " matrix to compute f*)",
                       {data_.cols, data_.cols, sizeof(double)}, "");
}

std::string FiniteSumProblem::describe() const { return description_; }

double FiniteSumProblem::loss(std::span<const double> x) const {
  double total = 0.0;
  for (std::size_t i = 0; i < data_.rows; ++i) total += sample_loss(i, x);
  return total / static_cast<double>(data_.rows);
}

void FiniteSumProblem::stochastic_gradient(std::span<const double> x, models::Rng& rng,
                                           std::span<double> out) const {
  sample_gradient(draw_index(rng, data_.rows), x, out);
}

void FiniteSumProblem::stochastic_prox(std::span<const double> x, double step, models::Rng& rng,
                                       std::span<double> out) const {
  sample_prox(draw_index(rng, data_.rows), x, step, out);
}

// ---- logistic regression ----------------------------------------------------------------------

double logistic_prox_root(double u, double v) {
  // h(t) = t - u - v sigma(-t) is increasing, h(u) <= 0 <= h(u + v).
  double low = u;
  double high = u + v;
  double t = u + v * sigmoid(-u);  // one fixed-point step: a good start
  for (int iteration = 0; iteration < 100; ++iteration) {
    const double s = sigmoid(-t);
    const double h = t - u - v * s;
    if (h == 0.0) return t;
    (h < 0.0 ? low : high) = t;
    const double newton = t - h / (1.0 + v * s * (1.0 - s));
    t = (newton > low && newton < high) ? newton : 0.5 * (low + high);
    if (high - low <= 1e-15 * std::max(1.0, std::abs(t))) break;
  }
  return t;
}

LogisticProblem::LogisticProblem(Dataset data, double l2, const std::string& name)
    : FiniteSumProblem(std::move(data), "logistic regression", name, ", l2 = " + std::to_string(l2)), l2_(l2) {
  if (!std::isfinite(l2) || l2 <= 0.0) throw InvalidArgument("logistic regression needs l2 > 0 (strong convexity)");
  for (double c : data_.targets) {
    if (c != 1.0 && c != -1.0) throw InvalidArgument("logistic regression needs labels +-1");
  }
  // Newton's method on the full objective: d is small, the Hessian is d x d.
  const std::size_t d = data_.cols;
  std::vector<double> x(d, 0.0);
  std::vector<double> gradient(d);
  for (int iteration = 0; iteration < 50; ++iteration) {
    std::vector<double> hessian(d * d, 0.0);
    for (std::size_t j = 0; j < d; ++j) {
      gradient[j] = l2_ * x[j];
      hessian[j * d + j] = l2_;
    }
    const double inv_rows = 1.0 / static_cast<double>(data_.rows);
    for (std::size_t i = 0; i < data_.rows; ++i) {
      const auto a = data_.row(i);
      const double c = data_.targets[i];
      const double s = sigmoid(-c * dot(a, x));
      for (std::size_t j = 0; j < d; ++j) gradient[j] -= inv_rows * c * s * a[j];
      const double w = inv_rows * s * (1.0 - s);
      for (std::size_t j = 0; j < d; ++j) {
        for (std::size_t k = 0; k <= j; ++k) hessian[j * d + k] += w * a[j] * a[k];
      }
    }
    for (std::size_t j = 0; j < d; ++j) {
      for (std::size_t k = j + 1; k < d; ++k) hessian[j * d + k] = hessian[k * d + j];
    }
    const auto step = solve_spd(std::move(hessian), gradient);
    double change = 0.0;
    for (std::size_t j = 0; j < d; ++j) {
      x[j] -= step[j];
      change = std::max(change, std::abs(step[j]));
    }
    if (change < 1e-12) break;
  }
  optimal_loss_ = loss(x);
}

double LogisticProblem::sample_loss(std::size_t j, std::span<const double> x) const {
  return logistic_loss(data_.targets[j] * dot(data_.row(j), x)) + 0.5 * l2_ * dot(x, x);
}

void LogisticProblem::sample_gradient(std::size_t j, std::span<const double> x, std::span<double> out) const {
  const auto a = data_.row(j);
  const double c = data_.targets[j];
  const double s = sigmoid(-c * dot(a, x));
  for (std::size_t k = 0; k < a.size(); ++k) out[k] = -c * s * a[k] + l2_ * x[k];
}

// The L2 term folds into the prox: prox_{g (l + l2/2 |.|^2)}(x) = prox_{g' l}(x / (1 + g l2)),
// g' = g / (1 + g l2).
void LogisticProblem::sample_prox(std::size_t j, std::span<const double> x, double step, std::span<double> out) const {
  const auto a = data_.row(j);
  const double c = data_.targets[j];
  const double shrink = 1.0 / (1.0 + step * l2_);
  const double g = step * shrink;
  const double u = c * dot(a, x) * shrink;
  const double t = logistic_prox_root(u, g * dot(a, a));
  const double pull = g * c * sigmoid(-t);
  for (std::size_t k = 0; k < a.size(); ++k) out[k] = x[k] * shrink + pull * a[k];
}

// ---- least squares ----------------------------------------------------------------------------

LeastSquaresProblem::LeastSquaresProblem(Dataset data, const std::string& name)
    : FiniteSumProblem(std::move(data), "least squares", name) {
  const std::size_t d = data_.cols;
  std::vector<double> normal(d * d, 0.0);
  std::vector<double> rhs(d, 0.0);
  for (std::size_t i = 0; i < data_.rows; ++i) {
    const auto a = data_.row(i);
    for (std::size_t j = 0; j < d; ++j) {
      rhs[j] += a[j] * data_.targets[i];
      for (std::size_t k = 0; k < d; ++k) normal[j * d + k] += a[j] * a[k];
    }
  }
  optimal_loss_ = loss(solve_spd(std::move(normal), std::move(rhs)));
}

double LeastSquaresProblem::sample_loss(std::size_t j, std::span<const double> x) const {
  const double r = dot(data_.row(j), x) - data_.targets[j];
  return 0.5 * r * r;
}

void LeastSquaresProblem::sample_gradient(std::size_t j, std::span<const double> x, std::span<double> out) const {
  const auto a = data_.row(j);
  const double r = dot(a, x) - data_.targets[j];
  for (std::size_t k = 0; k < a.size(); ++k) out[k] = r * a[k];
}

void LeastSquaresProblem::sample_prox(std::size_t j, std::span<const double> x, double step, std::span<double> out) const {
  const auto a = data_.row(j);
  const double scale = step * (dot(a, x) - data_.targets[j]) / (1.0 + step * dot(a, a));
  for (std::size_t k = 0; k < a.size(); ++k) out[k] = x[k] - scale * a[k];
}

}  // namespace ata::ml

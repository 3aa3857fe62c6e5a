#pragma once
// The optimisation problems of ata-sgd and ata-prox: each task of a batch computes one
// stochastic gradient, or one stochastic prox, at the round's point.

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ata/models/random.hpp"
#include "dataset.hpp"

namespace ata::ml {

/// min_x f(x) = E_j f_j(x). Methods are const and thread-safe: tasks on many workers call
/// them at once, each with its own generator.
class Problem {
 public:
  virtual ~Problem() = default;
  [[nodiscard]] virtual std::string describe() const = 0;
  [[nodiscard]] virtual std::size_t dim() const = 0;
  [[nodiscard]] virtual std::vector<double> initial_point() const { return std::vector<double>(dim(), 0.0); }
  /// The full objective f(x).
  [[nodiscard]] virtual double loss(std::span<const double> x) const = 0;
  /// min_x f(x), computed to machine precision when the problem is built.
  [[nodiscard]] double optimal_loss() const noexcept { return optimal_loss_; }
  /// One stochastic gradient at x into `out` (size dim()).
  virtual void stochastic_gradient(std::span<const double> x, models::Rng& rng,
                                   std::span<double> out) const = 0;
  /// prox_{step f_j}(x) = argmin_y f_j(y) + |y - x|^2 / (2 step) for one sampled j.
  /// Throws ata::Error for problems without a prox (has_prox() false).
  virtual void stochastic_prox(std::span<const double> x, double step, models::Rng& rng,
                               std::span<double> out) const;
  [[nodiscard]] virtual bool has_prox() const noexcept { return false; }

 protected:
  double optimal_loss_ = 0.0;
};

/// The paper's quadratic: f(x) = 1/2 x'Ax - b'x, A = (1/4) tridiag(-1, 2, -1), b = -(1/4) e_1,
/// x0 = sqrt(d) e_1, stochastic gradient = Ax - b + N(0, noise^2 I).
class QuadraticProblem final : public Problem {
 public:
  QuadraticProblem(std::size_t dim, double noise);
  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] std::size_t dim() const override { return dim_; }
  [[nodiscard]] std::vector<double> initial_point() const override;
  [[nodiscard]] double loss(std::span<const double> x) const override;
  void stochastic_gradient(std::span<const double> x, models::Rng& rng,
                           std::span<double> out) const override;

 private:
  std::size_t dim_;
  double noise_;
};

/// A finite sum over a dataset, f = mean_j f_j: a task samples j uniformly.
class FiniteSumProblem : public Problem {
 public:
  void stochastic_gradient(std::span<const double> x, models::Rng& rng,
                           std::span<double> out) const final;
  void stochastic_prox(std::span<const double> x, double step, models::Rng& rng,
                       std::span<double> out) const final;
  [[nodiscard]] bool has_prox() const noexcept final { return true; }
  [[nodiscard]] std::size_t dim() const final { return data_.cols; }
  [[nodiscard]] std::string describe() const final;
  [[nodiscard]] double loss(std::span<const double> x) const final;
  [[nodiscard]] std::size_t samples() const noexcept { return data_.rows; }

  /// f_j, its gradient and its prox, for a given j (the tests check them one at a time).
  [[nodiscard]] virtual double sample_loss(std::size_t j, std::span<const double> x) const = 0;
  virtual void sample_gradient(std::size_t j, std::span<const double> x, std::span<double> out) const = 0;
  virtual void sample_prox(std::size_t j, std::span<const double> x, double step, std::span<double> out) const = 0;

 protected:
  /// Described as "<kind> on <name> (rows x cols<details>)". Throws ata::InvalidArgument for an
  /// empty dataset, or one with so many features that the cols x cols matrix behind f* would
  /// exceed apps::kMaxMemoryBytes.
  FiniteSumProblem(Dataset data, const std::string& kind, const std::string& name, const std::string& details = "");
  Dataset data_;

 private:
  std::string description_;
};

/// Binary logistic regression with L2: f_j(x) = log(1 + exp(-c_j a_j'x)) + (l2/2) |x|^2,
/// labels c_j = +-1.
class LogisticProblem final : public FiniteSumProblem {
 public:
  LogisticProblem(Dataset data, double l2, const std::string& name);
  [[nodiscard]] double sample_loss(std::size_t j, std::span<const double> x) const override;
  void sample_gradient(std::size_t j, std::span<const double> x, std::span<double> out) const override;
  void sample_prox(std::size_t j, std::span<const double> x, double step, std::span<double> out) const override;

 private:
  double l2_;
};

/// Least squares: f_j(x) = 1/2 (a_j'x - b_j)^2; its prox is closed-form.
class LeastSquaresProblem final : public FiniteSumProblem {
 public:
  LeastSquaresProblem(Dataset data, const std::string& name);
  [[nodiscard]] double sample_loss(std::size_t j, std::span<const double> x) const override;
  void sample_gradient(std::size_t j, std::span<const double> x, std::span<double> out) const override;
  void sample_prox(std::size_t j, std::span<const double> x, double step, std::span<double> out) const override;
};

/// The scalar root behind the logistic prox: the prox y of f_j(y) = ln(1 + exp(-c a'y)) (label
/// c = +-1) is y = x + step c sigma(-t) a with t = c a'y, so t is the unique root of
/// t = u + v sigma(-t), u = c a'x, v = step |a|^2 >= 0, found by Newton's method safeguarded by
/// the bracket [u, u + v].
[[nodiscard]] double logistic_prox_root(double u, double v);

}  // namespace ata::ml

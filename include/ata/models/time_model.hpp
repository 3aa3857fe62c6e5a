#pragma once
/// @file
/// Distributions of one task's duration on one worker, sampled reproducibly.

#include <memory>
#include <string>
#include <vector>

#include "ata/models/random.hpp"

namespace ata::models {

/// A task-time distribution. A small value type: copy it freely; sample() is const and
/// thread-safe as long as each thread passes its own Rng.
///
/// @code
/// ata::models::Rng rng(42);
/// auto model = ata::models::TimeModel::shifted_exponential(/*shift=*/29.0, /*mean=*/29.0);
/// double t = model.sample(rng);   // >= 29, mean 58
/// @endcode
///
/// Every factory validates its parameters and throws ata::InvalidArgument naming the bad one.
class TimeModel {
 public:
  enum class Kind {
    constant, exponential, shifted_exponential, gamma, lognormal, uniform, half_normal, pareto,
    mixture, outage
  };

  /// Always `value` (>= 0).
  [[nodiscard]] static TimeModel constant(double value);
  /// Exponential with the given mean (> 0).
  [[nodiscard]] static TimeModel exponential(double mean);
  /// shift + Exponential(mean): shift >= 0, mean > 0. The paper's X = m/2 + Exp(m/2).
  [[nodiscard]] static TimeModel shifted_exponential(double shift, double mean);
  /// Gamma with shape k > 0 and scale theta > 0 (mean k theta).
  [[nodiscard]] static TimeModel gamma(double shape, double scale);
  /// exp(N(mu, sigma^2)), sigma >= 0.
  [[nodiscard]] static TimeModel lognormal(double mu, double sigma);
  /// Uniform on [low, high], 0 <= low <= high.
  [[nodiscard]] static TimeModel uniform(double low, double high);
  /// |N(0, sigma^2)|, sigma > 0 (mean sigma sqrt(2/pi)).
  [[nodiscard]] static TimeModel half_normal(double sigma);
  /// Pareto with scale x_m > 0 and shape a > 1 (so the mean x_m a / (a - 1) is finite).
  [[nodiscard]] static TimeModel pareto(double scale, double shape);
  /// Picks component j with probability weights[j] / sum(weights), then samples it.
  [[nodiscard]] static TimeModel mixture(std::vector<double> weights, std::vector<TimeModel> components);
  /// The largest outage probability: a task then makes 1 / (1 - p) = 1000 attempts on
  /// average, and each attempt is one draw, so a p closer to 1 would make sampling hang.
  static constexpr double kMaxOutageProbability = 0.999;

  /// With probability p in [0, kMaxOutageProbability] an attempt hangs: it is given up after
  /// `timeout` (> 0) and retried on the same worker, so a task costs
  /// timeout x (number of hung attempts) + base.
  [[nodiscard]] static TimeModel outage(TimeModel base, double probability, double timeout);

  /// One draw.
  [[nodiscard]] double sample(Rng& rng) const;
  [[nodiscard]] double mean() const noexcept { return mean_; }
  [[nodiscard]] double variance() const noexcept { return variance_; }
  [[nodiscard]] Kind kind() const noexcept { return kind_; }
  /// E.g. "shifted_exponential(shift=29, mean=29)".
  [[nodiscard]] std::string describe() const;
  /// The same distribution with every duration multiplied by `factor` (> 0).
  [[nodiscard]] TimeModel scaled(double factor) const;

 private:
  TimeModel(Kind kind, double a, double b);

  Kind kind_ = Kind::constant;
  double a_ = 0.0;  // first parameter, as named by the factory
  double b_ = 0.0;  // second parameter
  double mean_ = 0.0;
  double variance_ = 0.0;
  // Mixture: cumulative weights and components; outage: the base model in components[0].
  std::shared_ptr<const std::vector<double>> cumulative_;
  std::shared_ptr<const std::vector<TimeModel>> components_;
};

}  // namespace ata::models

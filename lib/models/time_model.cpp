#include "ata/models/time_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <sstream>
#include <string>

#include "ata/core/error.hpp"
#include "core/checks.hpp"

namespace ata::models {

namespace {

double exponential_draw(Rng& rng, double mean) { return -mean * std::log1p(-uniform01(rng)); }

// Marsaglia and Tsang (2000); shape < 1 through Gamma(shape + 1) * U^(1/shape).
double gamma_draw(Rng& rng, double shape, double scale) {
  if (shape < 1.0) {
    const double u = 1.0 - uniform01(rng);
    return gamma_draw(rng, shape + 1.0, scale) * std::pow(u, 1.0 / shape);
  }
  const double d = shape - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x = 0.0;
    double v = 0.0;
    do {
      x = standard_normal(rng);
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    const double u = 1.0 - uniform01(rng);
    if (std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v)) return d * v * scale;
  }
}

void require_probability(double p) {
  if (!(p >= 0.0 && p <= TimeModel::kMaxOutageProbability)) {
    throw InvalidArgument("outage probability must be in [0, " +
                          detail::to_text(TimeModel::kMaxOutageProbability) + "], got " +
                          detail::to_text(p));
  }
}

}  // namespace

TimeModel::TimeModel(Kind kind, double a, double b) : kind_(kind), a_(a), b_(b) {}

TimeModel TimeModel::constant(double value) {
  detail::require_non_negative(value, "constant time");
  TimeModel m(Kind::constant, value, 0.0);
  m.mean_ = value;
  return m;
}

TimeModel TimeModel::exponential(double mean) {
  detail::require_positive(mean, "exponential mean");
  TimeModel m(Kind::exponential, mean, 0.0);
  m.mean_ = mean;
  m.variance_ = mean * mean;
  return m;
}

TimeModel TimeModel::shifted_exponential(double shift, double mean) {
  detail::require_non_negative(shift, "shifted exponential shift");
  detail::require_positive(mean, "shifted exponential mean");
  TimeModel m(Kind::shifted_exponential, shift, mean);
  m.mean_ = shift + mean;
  m.variance_ = mean * mean;
  return m;
}

TimeModel TimeModel::gamma(double shape, double scale) {
  detail::require_positive(shape, "gamma shape");
  detail::require_positive(scale, "gamma scale");
  TimeModel m(Kind::gamma, shape, scale);
  m.mean_ = shape * scale;
  m.variance_ = shape * scale * scale;
  return m;
}

TimeModel TimeModel::lognormal(double mu, double sigma) {
  if (!std::isfinite(mu)) throw InvalidArgument("lognormal mu must be finite, got " + detail::to_text(mu));
  detail::require_non_negative(sigma, "lognormal sigma");
  TimeModel m(Kind::lognormal, mu, sigma);
  const double s2 = sigma * sigma;
  m.mean_ = std::exp(mu + s2 / 2.0);
  m.variance_ = std::expm1(s2) * std::exp(2.0 * mu + s2);
  return m;
}

TimeModel TimeModel::uniform(double low, double high) {
  detail::require_non_negative(low, "uniform low");
  detail::require_non_negative(high, "uniform high");
  if (high < low) {
    throw InvalidArgument("uniform needs low <= high, got low=" + detail::to_text(low) +
                          " high=" + detail::to_text(high));
  }
  TimeModel m(Kind::uniform, low, high);
  m.mean_ = (low + high) / 2.0;
  m.variance_ = (high - low) * (high - low) / 12.0;
  return m;
}

TimeModel TimeModel::half_normal(double sigma) {
  detail::require_positive(sigma, "half-normal sigma");
  TimeModel m(Kind::half_normal, sigma, 0.0);
  m.mean_ = sigma * std::sqrt(2.0 / std::numbers::pi);
  m.variance_ = sigma * sigma * (1.0 - 2.0 / std::numbers::pi);
  return m;
}

TimeModel TimeModel::pareto(double scale, double shape) {
  detail::require_positive(scale, "pareto scale");
  detail::require_positive(shape, "pareto shape");
  if (shape <= 1.0) {
    throw InvalidArgument("pareto shape must be > 1 for a finite mean, got " + detail::to_text(shape));
  }
  TimeModel m(Kind::pareto, scale, shape);
  m.mean_ = scale * shape / (shape - 1.0);
  m.variance_ = shape > 2.0 ? scale * scale * shape / ((shape - 1.0) * (shape - 1.0) * (shape - 2.0))
                            : std::numeric_limits<double>::infinity();
  return m;
}

TimeModel TimeModel::mixture(std::vector<double> weights, std::vector<TimeModel> components) {
  if (components.empty()) throw InvalidArgument("a mixture needs at least one component, got 0");
  if (weights.size() != components.size()) {
    throw InvalidArgument("a mixture needs one weight per component: " +
                          std::to_string(weights.size()) + " weights for " +
                          std::to_string(components.size()) + " components");
  }
  double total = 0.0;
  for (const double w : weights) {
    detail::require_non_negative(w, "mixture weight");
    total += w;
  }
  if (total <= 0.0) throw InvalidArgument("mixture weights must not all be 0");
  auto cumulative = std::make_shared<std::vector<double>>();
  double running = 0.0;
  double mean = 0.0;
  double second_moment = 0.0;
  for (std::size_t j = 0; j < weights.size(); ++j) {
    const double w = weights[j] / total;
    running += w;
    cumulative->push_back(running);
    mean += w * components[j].mean();
    second_moment += w * (components[j].variance() + components[j].mean() * components[j].mean());
  }
  cumulative->back() = 1.0;
  TimeModel m(Kind::mixture, 0.0, 0.0);
  m.mean_ = mean;
  m.variance_ = std::max(second_moment - mean * mean, 0.0);
  m.cumulative_ = std::move(cumulative);
  m.components_ = std::make_shared<const std::vector<TimeModel>>(std::move(components));
  return m;
}

TimeModel TimeModel::outage(TimeModel base, double probability, double timeout) {
  require_probability(probability);
  detail::require_positive(timeout, "outage timeout");
  TimeModel m(Kind::outage, probability, timeout);
  const double hung = probability / (1.0 - probability);  // mean number of hung attempts
  m.mean_ = base.mean() + timeout * hung;
  m.variance_ = base.variance() + timeout * timeout * hung / (1.0 - probability);
  m.components_ = std::make_shared<const std::vector<TimeModel>>(1, std::move(base));
  return m;
}

double TimeModel::sample(Rng& rng) const {
  switch (kind_) {
    case Kind::constant:
      return a_;
    case Kind::exponential:
      return exponential_draw(rng, a_);
    case Kind::shifted_exponential:
      return a_ + exponential_draw(rng, b_);
    case Kind::gamma:
      return gamma_draw(rng, a_, b_);
    case Kind::lognormal:
      return std::exp(a_ + b_ * standard_normal(rng));
    case Kind::uniform:
      return a_ + (b_ - a_) * uniform01(rng);
    case Kind::half_normal:
      return a_ * std::abs(standard_normal(rng));
    case Kind::pareto:
      return a_ / std::pow(1.0 - uniform01(rng), 1.0 / b_);
    case Kind::mixture: {
      const double u = uniform01(rng);
      const auto& c = *cumulative_;
      const auto j = static_cast<std::size_t>(std::upper_bound(c.begin(), c.end(), u) - c.begin());
      return (*components_)[std::min(j, c.size() - 1)].sample(rng);
    }
    case Kind::outage: {
      double total = 0.0;
      while (uniform01(rng) < a_) total += b_;
      return total + (*components_)[0].sample(rng);
    }
  }
  return 0.0;  // unreachable: every kind returns above
}

std::string TimeModel::describe() const {
  std::ostringstream out;
  switch (kind_) {
    case Kind::constant: out << "constant(" << a_ << ")"; break;
    case Kind::exponential: out << "exponential(mean=" << a_ << ")"; break;
    case Kind::shifted_exponential: out << "shifted_exponential(shift=" << a_ << ", mean=" << b_ << ")"; break;
    case Kind::gamma: out << "gamma(shape=" << a_ << ", scale=" << b_ << ")"; break;
    case Kind::lognormal: out << "lognormal(mu=" << a_ << ", sigma=" << b_ << ")"; break;
    case Kind::uniform: out << "uniform(low=" << a_ << ", high=" << b_ << ")"; break;
    case Kind::half_normal: out << "half_normal(sigma=" << a_ << ")"; break;
    case Kind::pareto: out << "pareto(scale=" << a_ << ", shape=" << b_ << ")"; break;
    case Kind::mixture: {
      out << "mixture(";
      double previous = 0.0;
      for (std::size_t j = 0; j < components_->size(); ++j) {
        out << (j ? ", " : "") << ((*cumulative_)[j] - previous) << "*" << (*components_)[j].describe();
        previous = (*cumulative_)[j];
      }
      out << ")";
      break;
    }
    case Kind::outage:
      out << "outage(" << (*components_)[0].describe() << ", p=" << a_ << ", timeout=" << b_ << ")";
      break;
  }
  return out.str();
}

TimeModel TimeModel::scaled(double factor) const {
  detail::require_positive(factor, "time scale factor");
  switch (kind_) {
    case Kind::constant: return constant(a_ * factor);
    case Kind::exponential: return exponential(a_ * factor);
    case Kind::shifted_exponential: return shifted_exponential(a_ * factor, b_ * factor);
    case Kind::gamma: return gamma(a_, b_ * factor);
    case Kind::lognormal: return lognormal(a_ + std::log(factor), b_);
    case Kind::uniform: return uniform(a_ * factor, b_ * factor);
    case Kind::half_normal: return half_normal(a_ * factor);
    case Kind::pareto: return pareto(a_ * factor, b_);
    case Kind::mixture: {
      std::vector<double> weights;
      std::vector<TimeModel> components;
      double previous = 0.0;
      for (std::size_t j = 0; j < components_->size(); ++j) {
        weights.push_back((*cumulative_)[j] - previous);
        previous = (*cumulative_)[j];
        components.push_back((*components_)[j].scaled(factor));
      }
      return mixture(std::move(weights), std::move(components));
    }
    case Kind::outage: return outage((*components_)[0].scaled(factor), a_, b_ * factor);
  }
  return *this;  // unreachable: every kind returns above
}

}  // namespace ata::models

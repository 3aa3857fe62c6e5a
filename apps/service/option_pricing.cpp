#include "option_pricing.hpp"

#include <algorithm>
#include <cmath>

namespace ata::service {

namespace {

double normal_cdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

// Polling the stop token costs an atomic load; once per this many draws keeps it negligible.
constexpr std::size_t kDrawsBetweenStopChecks = 256;

}  // namespace

double black_scholes_price(const EuropeanCall& o) {
  const double root_t = std::sqrt(o.maturity);
  const double d1 =
      (std::log(o.spot / o.strike) + (o.rate + 0.5 * o.volatility * o.volatility) * o.maturity) /
      (o.volatility * root_t);
  const double d2 = d1 - o.volatility * root_t;
  return o.spot * normal_cdf(d1) - o.strike * std::exp(-o.rate * o.maturity) * normal_cdf(d2);
}

PricingPart price_paths(const EuropeanCall& o, std::size_t draws, models::Rng& rng,
                        const std::stop_token& stop) {
  const double drift = (o.rate - 0.5 * o.volatility * o.volatility) * o.maturity;
  const double diffusion = o.volatility * std::sqrt(o.maturity);
  const double discount = std::exp(-o.rate * o.maturity);
  PricingPart part;
  for (std::size_t u = 0; u < draws; ++u) {
    if (u % kDrawsBetweenStopChecks == 0 && stop.stop_requested()) break;
    const double terminal = o.spot * std::exp(drift + diffusion * models::standard_normal(rng));
    const double payoff = discount * std::max(terminal - o.strike, 0.0);
    part.sum += payoff;
    part.sum_squares += payoff * payoff;
    ++part.draws;
  }
  return part;
}

PricingEstimate combine(std::span<const PricingPart> parts) {
  PricingEstimate out;
  double sum = 0.0;
  double sum_squares = 0.0;
  for (const auto& p : parts) {
    out.draws += p.draws;
    sum += p.sum;
    sum_squares += p.sum_squares;
  }
  if (out.draws == 0) return out;
  const auto n = static_cast<double>(out.draws);
  out.price = sum / n;
  if (out.draws > 1) {
    const double variance = std::max(sum_squares - n * out.price * out.price, 0.0) / (n - 1.0);
    out.standard_error = std::sqrt(variance / n);
  }
  return out;
}

double part_price(const PricingPart& part) {
  return part.draws > 0 ? part.sum / static_cast<double>(part.draws) : 0.0;
}

}  // namespace ata::service

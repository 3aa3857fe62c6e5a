#pragma once
// The arithmetic behind ata-serve's POST /estimate: the price of a European call option by
// Monte Carlo under Black-Scholes, split into independent parts (one per task) that combine
// into one estimate with its standard error. The closed-form price checks the result.

#include <cstddef>
#include <span>
#include <stop_token>

#include "ata/models/random.hpp"

namespace ata::service {

/// A call option on a stock following geometric Brownian motion.
struct EuropeanCall {
  double spot = 100.0;
  double strike = 100.0;
  double rate = 0.05;       ///< risk-free, continuously compounded, per year
  double volatility = 0.2;  ///< per sqrt(year)
  double maturity = 1.0;    ///< years
};

/// The Black-Scholes price of `option` (10.4506 for the defaults).
[[nodiscard]] double black_scholes_price(const EuropeanCall& option);

/// One task's share: how many discounted payoffs it drew, their sum and sum of squares.
struct PricingPart {
  std::size_t draws = 0;
  double sum = 0.0;
  double sum_squares = 0.0;
};

/// Draws `draws` terminal prices from `rng` and sums the discounted payoffs. Returns early,
/// with fewer draws, once `stop` is requested (the part is then discarded anyway).
[[nodiscard]] PricingPart price_paths(const EuropeanCall& option, std::size_t draws,
                                      models::Rng& rng, const std::stop_token& stop = {});

/// The pooled estimate of several parts.
struct PricingEstimate {
  double price = 0.0;
  double standard_error = 0.0;  ///< sample standard deviation / sqrt(draws)
  std::size_t draws = 0;
};

/// Pools `parts`; a price of 0 and an error of 0 when there are no draws.
[[nodiscard]] PricingEstimate combine(std::span<const PricingPart> parts);

/// The estimate of one part alone.
[[nodiscard]] double part_price(const PricingPart& part);

}  // namespace ata::service

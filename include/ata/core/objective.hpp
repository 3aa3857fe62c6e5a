#pragma once
/// @file
/// What a user pays for a batch: its wall time and the worker time it burns, weighed by a price.

#include <cmath>
#include <cstddef>
#include <optional>
#include <string>

#include "ata/core/error.hpp"

namespace ata {

/// The objective a run is judged by: wall + p x work, where p (the work price) is what one
/// worker-second costs in wall-seconds. p = 0 asks for the fastest run at any cost; a large p
/// for the least work.
///
/// The default price is p = 1/n for n workers: a worker-second is worth 1/n of a wall-second,
/// so p x work is the time for which the whole cluster was busy, in wall-seconds. Both terms
/// then share one unit (renting the cluster for a second costs as much as waiting a second),
/// the price needs no knowledge of the task times, and it scales with the cluster: GTA, which
/// keeps all n workers busy, pays its wall time twice; a strategy that leaves half the cluster
/// idle pays 1.5 times its wall time.
///
/// @code
/// ata::Objective objective;                  // p = 1/n
/// double p = objective.price(51);            // 1/51
/// double cost = objective.value(10.0, 255.0, 51);  // 10 + 255/51 = 15
/// ata::Objective fastest{0.0};               // wall time only
/// @endcode
struct Objective {
  /// p >= 0, finite; std::nullopt: 1/n (see above).
  std::optional<double> work_price;

  /// Throws ata::InvalidArgument unless the price is a finite number >= 0.
  void check() const {
    if (work_price && !(std::isfinite(*work_price) && *work_price >= 0.0)) {
      throw InvalidArgument("the work price must be a finite number >= 0, got " +
                            std::to_string(*work_price));
    }
  }
  /// The price for a cluster of `workers` workers (>= 1).
  [[nodiscard]] double price(std::size_t workers) const {
    check();
    if (work_price) return *work_price;
    if (workers == 0) throw InvalidArgument("the default work price 1/n needs n >= 1 workers, got 0");
    return 1.0 / static_cast<double>(workers);
  }
  /// wall + price(workers) x work.
  [[nodiscard]] double value(double wall, double work, std::size_t workers) const {
    return wall + price(workers) * work;
  }
};

}  // namespace ata

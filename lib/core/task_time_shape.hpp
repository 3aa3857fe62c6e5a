#pragma once
// ata-auto's model of the law of a worker's tasks: the shape of one task time, pooled over the
// workers and learned without a parametric family, and the expected round time it predicts.
// Internal to the library.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace ata::detail {

/// The shape of task times pooled over workers: the most recent kRatios ratios time / (the
/// worker's mean), whose empirical law is the table of one task, and from which the law of a
/// sum of a task times (a = 2..kTables) is tabulated by resampling, on kPaths common random
/// paths (path r's sum of a + 1 times is its sum of a plus one more draw); each table is scaled
/// to mean 1 (X_a, the sum over a). Worker j's sum of a tasks is modelled as mean_j a X_a: the
/// workers form a scale family, as ata-auto assumes. Beyond kTables tasks the deviation of
/// X_kTables from 1 shrinks by sqrt(kTables / a), as a sum's does.
///
/// The tables are built once kRatios ratios have come (a shape from fewer misjudged the number
/// of workers in ata-auto's first rounds: cifar, K = 1,000, seed 2: 1.036x OFTA against 0.988x),
/// then rebuilt at 2, 4 and 8 kRatios ratios and every 8 kRatios after that. A build costs
/// O(kRatios + kTables (kPaths + kCells)), so the cost per ratio stays small. Deterministic:
/// the resampling draws from a generator seeded at construction.
///
/// How close: against direct simulation, within 3% on the paper's law and exponential times
/// (Erlang sums, the maximum of m exponentials); on lognormal times of cv 2.9 the maximum of
/// heavy-tailed sums is 0.89-1.01 times the true one (the tail beyond the ratios seen is lost).
///
/// @code
/// ata::detail::TaskTimeShape shape(/*seed=*/1);
/// for (double r : ratios) shape.add(r);  // kRatios or more
/// double e = shape.expected_max({{/*mean=*/2.0, /*tasks=*/3}, {5.0, 1}});
/// @endcode
///
/// Not thread-safe.
class TaskTimeShape {
 public:
  static constexpr std::size_t kRatios = 1024;
  static constexpr std::size_t kTables = 32;
  static constexpr std::size_t kPaths = 512;
  static constexpr std::size_t kCells = 96;   // CDF grid of each table
  static constexpr std::size_t kPanels = 48;  // of expected_max()'s integral

  /// A worker's part in a round: the mean of one of its tasks, and its tasks.
  struct Term {
    double mean = 0.0;
    std::size_t tasks = 0;
  };

  explicit TaskTimeShape(std::uint64_t seed) noexcept;

  /// Adds a ratio time / (the worker's mean) >= 0; rebuilds the tables when due.
  void add(double ratio);
  /// True once the tables are built (kRatios ratios, not all 0).
  [[nodiscard]] bool ready() const noexcept { return !low_.empty(); }
  /// The last kRatios ratios, unscaled, in no particular order: the empirical law of one task.
  [[nodiscard]] std::span<const double> ratios() const noexcept { return ratios_; }
  /// E[max_j S_j] for independent sums S_j modelled as above: the integral of
  /// 1 - prod_j P(S_j <= t) over t, the midpoint rule on kPanels panels of the range where
  /// that product is neither 0 nor 1, each P linear between its table's grid points; one sum
  /// alone: its mean, exactly. Terms with no task are skipped; 0 if none has one. Cost
  /// O(kPanels x terms). Requires ready().
  [[nodiscard]] double expected_max(std::span<const Term> terms);

 private:
  void rebuild();
  void tabulate(std::span<const double> sums, std::size_t a);

  std::uint64_t state_;
  std::vector<double> ratios_;  // a ring once full
  std::size_t added_ = 0;
  std::size_t next_build_;
  // Table a (1-based) spans [low_[a-1], low_[a-1] + kCells width_[a-1]]; cdf_ holds kCells + 1
  // values per table, P(X_a <= grid point).
  std::vector<double> low_;
  std::vector<double> width_;
  std::vector<double> cdf_;
  std::vector<double> sums_;  // scratch of rebuild()
  struct Scaled {             // a term's grid coordinate slope * t + intercept, on its table's CDF
    double slope;
    double intercept;
    const double* cdf;
  };
  std::vector<Scaled> scaled_;  // scratch of expected_max()
};

}  // namespace ata::detail

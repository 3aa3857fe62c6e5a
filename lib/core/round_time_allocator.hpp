#pragma once
// ata-auto's allocation step: the allocation of least (approximate) expected round time for
// workers known by the mean and spread of their task times. Internal to the library.

#include <cstddef>
#include <span>
#include <utility>
#include <vector>

#include "core/task_time_shape.hpp"

namespace ata::detail {

/// z with Phi(z) = p for 0 < p < 1: Acklam's rational approximation and one Halley step.
[[nodiscard]] double normal_quantile(double p) noexcept;

/// The standard score of the expected maximum of m balanced random times: the maximum of m
/// independent times is about their common quantile of probability exp(-exp(-gamma) / m) =
/// 0.5704^(1/m), the mean of the Gumbel limit (exact for exponentials as m grows: H_m ~ ln m +
/// gamma). Returns normal_quantile of that probability; m >= 2.
[[nodiscard]] double balanced_max_score(std::size_t m) noexcept;

/// Allocates a batch over candidate workers, each known by the mean and squared coefficient of
/// variation of one task time, so as to minimise the round time E[max_j S_j] approximately:
/// S_j(a), the sum of a task times, is taken to be gamma with mean a mean_j and variance
/// a (cv_j mean_j)^2, and the round time to be the largest of the workers' quantiles of
/// probability 0.5704^(1/m), m the number of workers with tasks (Wilson-Hilferty's cube for the
/// gamma quantile; never below a mean_j, since E[max_j S_j] >= E[S_j]). Minimising the largest
/// of these increasing functions is exact by adding tasks one at a time to the smallest; m is
/// found by iterating from the previous call's value (usually one pass). Each candidate gets at
/// most caps[j] tasks, unless the caps add up to less than the batch (then they are ignored).
///
/// With every cv = 0 this is the min-max solver's allocation (a_j mean_j). Against EOFTA (the
/// exact minimiser, ata::sim::solve_eofta) with the true means and spreads: the same allocation
/// on the paper's laws, within 2% on the mixture, gamma, Pareto and outage clusters of
/// docs/beyond-the-paper.md, and 24% above on lognormal times of sigma 1.5, whose sums are far
/// more skewed than gamma ones: solve_with_shape() corrects the number of workers it uses.
///
/// Not thread-safe; keeps scratch buffers between calls.
class RoundTimeAllocator {
 public:
  /// tasks[j] (resized to means.size()) receives candidate j's tasks; returns the predicted
  /// round time (the largest quantile). means >= 0, cv2 >= 0, batch >= 1, at least one
  /// candidate (unchecked: the caller's invariants).
  /// With a `backlog` (tasks candidate j must finish first; empty: none), candidate j's time
  /// is that of backlog[j] + a_j tasks: the load-aware allocation of overlapping batches.
  double solve(std::span<const double> means, std::span<const double> cv2,
               std::span<const std::size_t> caps, std::size_t batch,
               std::vector<std::size_t>& tasks, std::span<const double> backlog = {});

  /// The quantile rule, then a choice by a learned shape of the task times. Among the rule's
  /// allocations (solve()'s, without its shortcut of the fastest worker alone) restricted to the u
  /// fastest candidates (in the order the rule takes them: by the level of a first task), for u the
  /// count chosen last time, one neighbour of it (alternately u - 1 and u + 1) and 1 (the fastest
  /// alone), the one of least shape.expected_max() with the candidates' `estimates` (the means
  /// without the posterior's noise); u at or above the count solve() would use is solve()'s own
  /// allocation. So the number of workers used walks, one a comparison, to the count the shape says
  /// is best, where the quantile rule misjudges skewed times (the largest of m single lognormal
  /// times is far above their common 0.5704^(1/m) quantile). Comparisons are made every
  /// kCompareEvery calls; in between, the count last chosen is played. Returns the chosen
  /// allocation's solve() prediction. Requires shape.ready().
  double solve_with_shape(std::span<const double> means, std::span<const double> cv2,
                          std::span<const std::size_t> caps, std::span<const double> estimates,
                          std::size_t batch, std::vector<std::size_t>& tasks, TaskTimeShape& shape);

 private:
  // solve(); `alone`: whether the fastest worker alone is a choice when others are available.
  double allocate(std::span<const double> means, std::span<const double> cv2,
                  std::span<const std::size_t> caps, std::size_t batch,
                  std::vector<std::size_t>& tasks, std::span<const double> backlog, bool alone);
  double restricted(std::size_t u, std::span<const double> means, std::span<const double> cv2,
                    std::span<const std::size_t> caps, std::size_t batch);
  double pass(std::size_t batch, std::size_t m, std::vector<std::size_t>& tasks);
  double score(std::size_t m);  // balanced_max_score(m), remembered
  // Tasks candidate j runs with `a` of this batch: its backlog first.
  [[nodiscard]] double queued(std::size_t j, std::size_t a) const noexcept {
    return backlog_.empty() ? static_cast<double>(a) : backlog_[j] + static_cast<double>(a);
  }

  std::span<const double> means_;
  std::span<const double> cv2_;
  std::span<const std::size_t> caps_;
  std::span<const double> backlog_;

  std::size_t last_m_ = 0;
  std::vector<std::pair<double, std::size_t>> heap_;
  std::vector<std::size_t> trial_;
  std::vector<std::size_t> unlimited_;
  std::vector<double> scores_;
  // solve_with_shape()'s state: the workers last chosen (0: none yet), which neighbour is next,
  // and scratch. A comparison costs two or three integrals (~1 us each with 15 workers); one
  // call in four keeps ata-auto's round within 1.3-1.5x of the quantile rule's alone.
  static constexpr std::size_t kCompareEvery = 4;
  std::size_t calls_ = 0;
  std::size_t last_used_ = 0;
  std::size_t last_full_used_ = 0;  // workers of the last unrestricted allocation
  bool below_next_ = true;
  std::size_t scout_ = 0;  // the last count scouted
  std::vector<std::size_t> order_;
  std::vector<double> first_level_;
  std::vector<double> sub_means_;
  std::vector<double> sub_cv2_;
  std::vector<std::size_t> sub_caps_;
  std::vector<std::size_t> sub_tasks_;
  std::vector<std::size_t> restricted_;
  std::vector<std::size_t> best_tasks_;
  std::vector<TaskTimeShape::Term> terms_;
};

}  // namespace ata::detail

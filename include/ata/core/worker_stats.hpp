#pragma once
/// @file
/// Running statistics of one worker's task durations.

#include <cstddef>

namespace ata {

/// Count, mean, variance and sum of a stream of durations, updated in O(1) per sample with
/// Welford's algorithm, so the variance stays accurate when the mean is large compared with
/// the spread (the naive sum-of-squares formula cancels catastrophically there).
///
/// @code
/// ata::WorkerStats s;
/// s.add(0.5);
/// s.add(1.5);
/// // s.count() == 2, s.mean() == 1.0, s.variance() == 0.5
/// ata::WorkerStats t;
/// t.add(2.5);
/// s.merge(t);  // as if s had seen 0.5, 1.5 and 2.5: s.mean() == 1.5, s.variance() == 1.0
/// @endcode
///
/// Statistics of disjoint streams merge exactly (Chan, Golub and LeVeque's parallel update):
/// summaries built by several threads, merged, equal to rounding those of one stream fed
/// sample by sample.
///
/// Not thread-safe: one owner updates it.
class WorkerStats {
 public:
  /// Adds one duration. Throws ata::InvalidArgument if `seconds` is NaN, infinite or negative.
  void add(double seconds);
  /// Absorbs the samples summarised by `other` (whose samples are valid by construction).
  void merge(const WorkerStats& other) noexcept;
  /// The statistics of `count` samples of mean `mean` whose squared deviations from it sum to
  /// `m2`: a summary computed elsewhere (say, in two passes over a chunk's times), to merge.
  /// Throws ata::InvalidArgument when `mean` or `m2` is NaN, infinite or negative.
  [[nodiscard]] static WorkerStats from_moments(std::size_t count, double mean, double m2);

  [[nodiscard]] std::size_t count() const noexcept { return count_; }
  /// Mean of the samples; 0 when there are none.
  [[nodiscard]] double mean() const noexcept { return mean_; }
  /// Unbiased sample variance (divides by count - 1); 0 with fewer than two samples.
  [[nodiscard]] double variance() const noexcept;
  /// Square root of variance().
  [[nodiscard]] double stddev() const noexcept;
  /// Sum of the samples (the worker's busy time on finished tasks).
  [[nodiscard]] double sum() const noexcept { return sum_; }

  /// Adds one censored duration: a task ran at least `seconds` and was stopped (a backup copy
  /// finished first). Kept apart: count(), mean() and variance() stay those of finished tasks.
  /// Throws ata::InvalidArgument if `seconds` is NaN, infinite or negative.
  void add_censored(double seconds);
  /// Number of censored durations.
  [[nodiscard]] std::size_t censored_count() const noexcept { return censored_count_; }
  /// Sum of the censored durations (busy time on stopped tasks).
  [[nodiscard]] double censored_sum() const noexcept { return censored_sum_; }

 private:
  std::size_t count_ = 0;
  double mean_ = 0.0;
  double m2_ = 0.0;  // sum of squared deviations from the running mean
  double sum_ = 0.0;
  std::size_t censored_count_ = 0;
  double censored_sum_ = 0.0;
};

}  // namespace ata

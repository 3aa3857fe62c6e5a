#pragma once
/// @file
/// The exact minimiser of the proxy loss, argmin_{sum a = B} max_i a_i s_i, and the
/// round-robin spreading rule used for zero scores and by UTA.

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "ata/core/allocation.hpp"

namespace ata {

/// The spreading rule: task j = 0..B-1 of a call goes to eligible[(r + j) mod |eligible|],
/// then r += B. The counter r persists across calls, so repeated small batches visit every
/// eligible worker in turn.
///
/// Not thread-safe.
class RoundRobinSpread {
 public:
  /// Adds `batch` tasks to `out` over `eligible` (worker indices, in the order to visit).
  /// Throws ata::InvalidArgument if `eligible` is empty.
  void spread(std::span<const std::size_t> eligible, std::size_t batch, Allocation& out);
  /// The counter r: tasks spread so far.
  [[nodiscard]] std::uint64_t offset() const noexcept { return offset_; }

 private:
  std::uint64_t offset_ = 0;
};

/// Exact solver of argmin_{a in N^n, sum a = B} max_i a_i s_i.
///
/// Rules:
/// - Scores must be finite and >= 0, B >= 1, n >= 1 (else ata::InvalidArgument naming the value).
/// - If any s_i = 0 the loss 0 is reached by giving tasks only to zero-score workers; the B
///   tasks are then spread over them with the RoundRobinSpread rule (the solver's own counter).
/// - Otherwise the result is exactly what the greedy "add each task to the worker with the
///   smallest (a_i + 1) s_i, lowest index first on ties" returns: the B smallest pairs
///   (j s_i, i), j >= 1, in lexicographic order. Among all minimisers this one is canonical.
///
/// Complexity: O(n) to pick the m = min(B, n) smallest scores (only they can get a task),
/// O(m) to fill every worker up to the fractional level lambda = B / sum(1/s_i), which leaves
/// at most m tasks, then O(m log m) to place those with a heap: O(n + m log m) in all, below
/// the paper's O(n log m + m^2).
///
/// @code
/// ata::MinMaxSolver solver;
/// std::vector<double> scores{1.0, 2.0, 4.0};
/// ata::Allocation a = solver.solve(scores, 7);  // {4, 2, 1}: loss 4
/// @endcode
///
/// Keeps scratch buffers between calls, so a long-lived solver does not allocate per round.
/// Not thread-safe: use one solver per thread.
class MinMaxSolver {
 public:
  /// Returns the allocation of `batch` tasks described above.
  [[nodiscard]] Allocation solve(std::span<const double> scores, std::size_t batch);
  /// As solve(), writing into `out` (resized to scores.size()) to reuse its storage.
  void solve(std::span<const double> scores, std::size_t batch, Allocation& out);
  /// With offsets: argmin_{sum a = B} max_{i : a_i > 0} (q_i + a_i s_i), where q_i >= 0 is
  /// work worker i must finish first (its backlog). The result is exactly the greedy "add each
  /// task to the worker with the smallest q_i + (a_i + 1) s_i, lowest index on ties": the B
  /// smallest pairs (q_i + j s_i, i), j >= 1, which no allocation can beat. Zero scores are
  /// spread as in solve() (offsets do not reorder unseen workers); all-zero offsets give
  /// exactly solve()'s result. Same complexity plus O(m log m) to water-fill the m candidates.
  /// Throws ata::InvalidArgument for offsets of another size, NaN, infinite or negative.
  void solve(std::span<const double> scores, std::span<const double> offsets, std::size_t batch,
             Allocation& out);
  /// The spreading counter used for zero scores.
  [[nodiscard]] const RoundRobinSpread& spread() const noexcept { return spread_; }

 private:
  void solve_positive(std::span<const double> scores, std::size_t batch, Allocation& out);
  void solve_with_offsets(std::span<const double> scores, std::span<const double> offsets,
                          std::size_t batch, Allocation& out);
  void place_below_level(std::span<const double> scores, std::span<const double> offsets,
                         std::size_t batch, double level, Allocation& out);
  // Validates and handles zero scores; true when `out` is final.
  bool prepare(std::span<const double> scores, std::size_t batch, Allocation& out);

  RoundRobinSpread spread_;
  std::vector<std::size_t> candidates_;
  std::vector<std::size_t> counts_;
  std::vector<std::pair<double, std::size_t>> heap_;
};

/// One-shot convenience: a fresh MinMaxSolver's solve().
[[nodiscard]] Allocation solve_min_max(std::span<const double> scores, std::size_t batch);

}  // namespace ata

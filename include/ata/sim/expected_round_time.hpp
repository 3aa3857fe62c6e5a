#pragma once
/// @file
/// The expected round time E[max_i S_i] of a fixed allocation on a simulated cluster, and EOFTA:
/// the fixed allocation that minimises it, a yardstick that counts the spread of the times.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "ata/core/allocation.hpp"
#include "ata/models/time_model.hpp"

namespace ata::sim {

/// How expected round times are computed.
struct RoundTimeOptions {
  /// Monte Carlo paths per worker for the laws whose sums have no exact distribution here
  /// (lognormal, uniform, half-normal, Pareto, mixture, outage); >= 64.
  std::size_t monte_carlo_paths = 4096;
  /// Seed of those paths. Every allocation is evaluated on the same paths (common random
  /// numbers): S_i(a + 1) is path r's S_i(a) plus one more draw, so comparisons between
  /// allocations are far more precise than each value.
  std::uint64_t seed = 0x5eed;
};

/// E[max_i S_i], where S_i is the sum of allocation[i] independent task times of worker i (0 for
/// an idle worker): the expected wall time of one allocated round.
///
/// @code
/// std::vector<ata::models::TimeModel> cluster{ata::models::TimeModel::exponential(1.0),
///                                          ata::models::TimeModel::exponential(2.0)};
/// double t = ata::sim::expected_round_time(cluster, ata::Allocation({1, 1}));
/// // E[max(X1, X2)] = 1 + 2 - 1 / (1/1 + 1/2) = 2.333...
/// @endcode
///
/// Computed as the integral of 1 - prod_i P(S_i <= t) over t. P(S_i <= t) is exact for constant
/// times (a step), exponential and gamma times (a gamma law) and shifted exponentials (a shifted
/// Erlang law); other laws use the empirical distribution of options.monte_carlo_paths sums.
/// The integral is an 8-point Gauss-Legendre rule on at least 256 panels, split at every
/// support start and around steep distributions: relative error below 1e-9 for the exact laws.
///
/// Throws ata::InvalidArgument if the allocation's size differs from workers.size(), workers is
/// empty, options.monte_carlo_paths < 64, or the computation would hold more than 5e7 values of
/// distributions (400 MB). Thread-safe (no shared state).
[[nodiscard]] double expected_round_time(std::span<const models::TimeModel> workers,
                                         const Allocation& allocation,
                                         const RoundTimeOptions& options = {});

/// What solve_eofta() found.
struct EoftaSolution {
  Allocation allocation;                  ///< the best allocation found
  double expected_round_time = 0.0;       ///< its E[max_i S_i]
  double ofta_expected_round_time = 0.0;  ///< E[max_i S_i] of OFTA's allocation, the start
  /// No allocation of the batch has a smaller E[max_i S_i] (for the Monte Carlo laws: on the
  /// same paths). expected_round_time / lower_bound - 1 is the certified optimality gap.
  double lower_bound = 0.0;
  bool exact = true;      ///< every worker that could get a task has an exact law (no Monte Carlo)
  std::size_t moves = 0;  ///< improving moves of the local search
};

/// No limit on the terms of a sweep (estimate_eofta_cost()).
inline constexpr double kNoSweepLimit = 1e300;

/// What solve_eofta() would cost, estimated before solving (estimate_eofta_cost()).
struct EoftaCost {
  /// The most values of distributions the search would hold at once (8 bytes each), an upper
  /// estimate from the laws' means, variances and breaks, without their Monte Carlo sums.
  double values = 0.0;
  /// The limit solve_eofta() enforces on `values` (it throws above it).
  double max_values = 0.0;
  /// Terms of one sweep of the local search, at most: quadrature nodes x workers with tasks x
  /// workers that may take one more (each term an expm1()). A search makes a few sweeps.
  double sweep_terms = 0.0;
  /// Why solve_eofta() would not fit: empty when it fits within `max_values` and the
  /// `max_sweep_terms` estimate_eofta_cost() was given.
  std::string reason;
  [[nodiscard]] bool fits() const noexcept { return reason.empty(); }
};

/// Sizes solve_eofta(workers, batch, options) without running its search: OFTA's allocation,
/// its expected round time (one quadrature over B (worker, task) pairs), the bounds on every
/// worker's tasks, and from them the values the search would hold and the terms of one sweep.
/// Never throws for a large cluster: a computation that would not fit comes back with
/// `reason` set ("EOFTA for n = ... would hold about ... values ..."), as does one whose sweep
/// would exceed `max_sweep_terms` (infinity: no limit on time). Cheap: milliseconds where
/// solve_eofta() takes seconds, and well under a second where it would refuse. Throws
/// ata::InvalidArgument for batch = 0, no workers or options.monte_carlo_paths < 64.
[[nodiscard]] EoftaCost estimate_eofta_cost(std::span<const models::TimeModel> workers,
                                            std::size_t batch, const RoundTimeOptions& options = {},
                                            double max_sweep_terms = kNoSweepLimit);

/// EOFTA: a fixed allocation minimising E[max_i S_i] given the true laws.
///
/// @code
/// // 10 workers Exp(mean 1) and 90 Exp(mean 20), B = 300: OFTA gives 21 tasks to each fast
/// // worker and 1 to each slow one (E ~ 101); EOFTA puts all 300 on the fast ones (E ~ 38).
/// std::vector<ata::models::TimeModel> cluster(10, ata::models::TimeModel::exponential(1.0));
/// cluster.resize(100, ata::models::TimeModel::exponential(20.0));
/// ata::sim::EoftaSolution best = ata::sim::solve_eofta(cluster, 300);
/// @endcode
///
/// The search: OFTA's allocation (argmin max_i a_i mu_i), then OFTA restricted to the j fastest
/// workers for every j below the number it uses (dropping slow workers), then local moves from
/// the best of these: move one task from one worker to another, or drop a worker and hand its
/// tasks to the others by the min-max rule, while E[max_i S_i] decreases. Since
/// E[max_i S_i] >= max_i a_i mu_i, no allocation with a_i mu_i above the best value found can be
/// better, which bounds the candidates. The result is a local optimum for these moves; its
/// distance to the global optimum is bounded by lower_bound, the integral of
/// 1 - max_a prod_i P(S_i(a_i) <= t) (for each t, the best allocation for that t alone; the
/// maximum is bounded through each worker's concave majorant of log P(S_i(a) <= t)).
/// Tested equal to the brute-force optimum over all allocations on small clusters.
///
/// Cost: about (moves + 2) x m x r x 2,000 exponentials (m workers with tasks, r that could
/// take one more), plus the lower bound's (workers x tasks) x 2,000 distribution evaluations:
/// ~0.1 s at n = 51, B = 23, a few seconds at n = 100, B = 300.
///
/// Throws ata::InvalidArgument for batch = 0, no workers, options.monte_carlo_paths < 64, or a
/// search that would hold more than 5e7 values of distributions (400 MB; e.g. 5,000 workers of
/// shifted exponential times and B = 5,000). Thread-safe (no shared state).
[[nodiscard]] EoftaSolution solve_eofta(std::span<const models::TimeModel> workers,
                                        std::size_t batch, const RoundTimeOptions& options = {});

}  // namespace ata::sim

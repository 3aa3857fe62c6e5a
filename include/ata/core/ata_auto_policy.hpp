#pragma once
/// @file
/// ATA-Auto: a learner with no distribution parameter. Posterior (Thompson) sampling of each
/// worker's mean with a coefficient of variation learned from all workers, and a robust test
/// that restarts a worker's statistics when its speed changes.

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "ata/core/policy.hpp"
#include "ata/core/solver.hpp"

namespace ata {

/// ATA-Auto ("ata-auto"): needs neither ATA's alpha nor ATA-Empirical's eta.
///
/// @code
/// ata::AtaAutoPolicy policy(/*workers=*/51, ata::AtaAutoPolicy::Options{}.set_seed(7));
/// ata::Allocation a;
/// for (int round = 0; round < 1000; ++round) {
///   policy.allocate(/*batch=*/23, a);
///   for (std::size_t i = 0; i < a.size(); ++i)
///     for (std::size_t t = 0; t < a[i]; ++t) policy.observe(i, run_task_on(i));
/// }
/// @endcode
///
/// Each round:
/// 1. Workers never observed get one task each, up to B of them, lowest index first (an
///    unseen worker may be the fastest, and B of them at once make the fewest such rounds).
/// 2. The other tasks go to the observed workers: for each, a mean is drawn from an
///    approximate posterior, log mu_i ~ N(log mean_i, (c cv_i)^2 / K_i), with K_i its samples
///    since its last detected change, cv_i its coefficient of variation (shrunk towards the
///    value pooled over all workers) and c = Options::exploration; then the exact min-max
///    allocation of the drawn means (MinMaxSolver) is played. A worker far slower than the
///    round's level is drawn below it only with a Gaussian-tail probability, so it is retried
///    rarely, while a fast worker with an unlucky first sample is retried soon.
/// 3. Every observation feeds a change test per worker: the clipped log-times of its last 4,
///    8 and 16 tasks are compared with its older ones; a shift of more than
///    Options::change_threshold standard errors restarts the worker's statistics from those
///    recent tasks, so a worker that slows down loses its tasks within a round or two.
///
/// Sound when: times of one worker are i.i.d. between changes with a finite variance; the
/// workers' laws are close to a scale family (time = work / speed: the same shape, different
/// means), which is what makes a pooled cv informative for a worker seen once or twice; a
/// change is a lasting shift of a worker's scale by a factor of about 1.5 or more.
///
/// Where it may fail:
/// - very different shapes across workers: a worker much more dispersed than the pool whose
///   first samples are unlucky looks slow with too much confidence and is retried late;
/// - heavy tails (Pareto, outages): the mean converges slowly; the change test clips log-times
///   at 3 standard deviations, so rare huge times do not trigger it, but they still move means;
/// - a worker that speeds up while it gets no tasks (a slow worker recovering) is found only
///   when the posterior draws it again, which gets rarer as its samples grow;
/// - adversarial or frequent changes (a worker that alternates faster than the test's window);
/// - it minimises the proxy max_i a_i mu_i like OFTA, not the expected round time, so it
///   inherits OFTA's blindness to the spread of the times.
///
/// Random draws come from Options::seed only: the same seed and the same observations give the
/// same allocations, bit for bit. Cost per round: O(n) for the draws (a worker far above the
/// candidates costs one uniform) and O(B log B) for the solver on the B best candidates; per
/// observation O(1) (the change test reads at most 16 stored times). Measured: ~4.4 us per
/// round at n = 459, B = 23 (docs/beyond-the-paper.md).
///
/// Not thread-safe (see Policy).
class AtaAutoPolicy final : public Policy {
 public:
  /// Settings; none is about the workers' time distributions.
  struct Options {
    /// Seed of the posterior draws.
    std::uint64_t seed = 0;
    /// c: the posterior's standard deviation is multiplied by c (finite, > 0). 1 is plain
    /// Thompson sampling; smaller retries slow workers less often (see docs/beyond-the-paper.md).
    double exploration = 0.5;
    /// z: a shift of a worker's recent log-times by more than z standard errors restarts its
    /// statistics (> 0; +infinity turns the change test off).
    double change_threshold = 6.0;

    Options& set_seed(std::uint64_t value) noexcept { seed = value; return *this; }
    Options& set_exploration(double value) noexcept { exploration = value; return *this; }
    Options& set_change_threshold(double value) noexcept { change_threshold = value; return *this; }
  };

  /// Throws ata::InvalidArgument for workers = 0, exploration not finite and > 0, or a
  /// change_threshold that is NaN or <= 0.
  AtaAutoPolicy(std::size_t workers, const Options& options);
  /// With the default Options (seed 0). Throws ata::InvalidArgument for workers = 0.
  explicit AtaAutoPolicy(std::size_t workers);

  [[nodiscard]] std::string_view name() const noexcept override { return "ata-auto"; }
  [[nodiscard]] const Options& options() const noexcept { return options_; }

  /// The mean the learner uses for `worker`: over its samples since its last detected change
  /// (0 while unseen). Throws ata::InvalidArgument when out of range.
  [[nodiscard]] double estimated_mean(std::size_t worker) const;
  /// The samples behind estimated_mean(worker). Throws ata::InvalidArgument when out of range.
  [[nodiscard]] std::size_t estimated_samples(std::size_t worker) const;
  /// The coefficient of variation pooled over all workers (1 until two samples of one worker).
  [[nodiscard]] double pooled_cv() const noexcept;
  /// How many times a change was detected (and a worker's statistics restarted).
  [[nodiscard]] std::size_t changes_detected() const noexcept { return changes_detected_; }

 private:
  static constexpr std::size_t kWindow = 16;  // recent times kept per worker for the change test

  // A worker's times since its last change: count, mean and squared deviations of the times
  // and of their logarithms (Welford), and the last kWindow of both in a ring.
  struct Worker {
    std::size_t count = 0;
    double mean = 0.0;
    double m2 = 0.0;
    double log_mean = 0.0;
    double log_m2 = 0.0;
    double relative_m2 = 0.0;  // m2 / mean^2, as last added to the pool
  };

  void choose(std::size_t batch, Allocation& out) override;
  void learn(std::size_t worker, double seconds) override;

  void add(std::size_t worker, double seconds, double log_seconds);
  void refresh(std::size_t worker);
  void restart(std::size_t worker, std::size_t keep);
  void test_for_change(std::size_t worker);
  void pool_remove(std::size_t worker);
  void pool_add(std::size_t worker);
  [[nodiscard]] double pooled_cv2() const noexcept;
  [[nodiscard]] double pooled_log_variance() const noexcept;

  Options options_;
  std::vector<Worker> workers_;
  std::vector<double> ring_;      // kWindow times per worker
  std::vector<double> log_ring_;  // their logarithms
  // The posterior of worker i, refreshed when stale: centre log(mean) and variance
  // pool_weight * pooled cv^2 + own (exploration^2 included), so that a round costs no division.
  std::vector<double> centre_;
  std::vector<double> pool_weight_;
  std::vector<double> own_;
  std::vector<unsigned char> stale_;
  std::size_t unseen_;
  std::size_t changes_detected_ = 0;
  // Pooled over workers with >= 2 samples: sum of m2 / mean^2, of log_m2, and of (count - 1).
  double pool_relative_m2_ = 0.0;
  double pool_log_m2_ = 0.0;
  double pool_dof_ = 0.0;

  std::vector<std::pair<double, std::size_t>> heap_;  // (log draw, worker) of the candidates
  std::vector<std::size_t> unseen_list_;
  std::vector<double> candidate_scores_;
  Allocation candidate_allocation_;
  MinMaxSolver solver_;
  RoundRobinSpread spread_;
  std::uint64_t random_state_;  // the posterior draws' generator (SplitMix64)
};

}  // namespace ata

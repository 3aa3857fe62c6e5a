#pragma once
/// @file
/// ATA-Auto: a learner with no distribution parameter. Posterior (Thompson) sampling of each
/// worker's mean with a coefficient of variation learned from all workers, and a robust test
/// that restarts a worker's statistics when its speed changes.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "ata/core/objective.hpp"
#include "ata/core/plan.hpp"
#include "ata/core/policy.hpp"
#include "ata/core/solver.hpp"

namespace ata::detail {
class PlanEvaluator;
class RoundTimeAllocator;
class TaskTimeShape;
}

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
/// 1. Exploration: one task each for workers the learner knows little about, beside the
///    exploitation of the others.
///    - Budgeted: first the follow-ups of a worker under test (step 4), then, while the
///      exploration credit is positive, the workers observed least recently: the unseen ones
///      first (lowest index first), then the idle ones, oldest first; at most
///      explored_per_round(B) = ceil(sqrt(B) / 2) workers in all (B = 8: 2, B = 23: 3,
///      B = 300: 9; none when B = 1), so that the round never waits on many of them. Each
///      round's largest exploratory time beyond the round's predicted time is charged to the
///      credit, which grows by Options::exploration_budget (2%) of every round's predicted
///      time: once the unseen workers are tried, re-trying idle ones costs about that fraction
///      of the wall time, whatever n, B or the horizon. In a load-aware round (allocate() with
///      a backlog) a worker with tasks still queued or running is not explored: those tasks
///      will report on it, and one more would wait behind them.
///    - Worth it: one more unseen worker (within the same cap) when the share of the 32
///      workers seen last that are faster than the slowest one in use, times what a useful
///      worker gains per round (the predicted round time over the workers in use), times the
///      rounds so far, exceeds what trying one costs (the mean time beyond the predicted round
///      time of those 32 workers' first times; first times in quota rounds only, since a
///      race's finished times are the short ones).
///    - Free: any number of unseen workers when their expected maximum time (from those 32
///      first times) stays below the predicted time of the round's other tasks, which happens
///      while the known workers are few or slow (the second round, typically).
///    The first round, with nothing known, spreads the batch over explored_per_round(B)
///    workers; with Options::race fungible it races min(n, 1/p) workers instead (every worker
///    at the default p = 1/n), in index order: a racer can only shorten a round (its B-th
///    result ends it) and their work costs at most the round's wall, and on a large cluster
///    whose fast workers are anywhere it finds many of them at once, where quotas over three
///    explored workers took tens of slow rounds (docs/frontier.md, sqrt-shuffled).
/// 2. The other tasks go to the observed workers: for each, a mean is drawn from an
///    approximate posterior, log mu_i ~ N(log mean_i, (c cv_i)^2 / K_i), with K_i its samples
///    since its last detected change, cv_i its coefficient of variation (shrunk towards the
///    value pooled over all workers) and c = Options::exploration. Among the workers with the
///    smallest draws, the allocation minimising an estimate of the expected round time
///    E[max_i S_i] is played: each worker's sum is taken to be gamma with the drawn mean and
///    its cv, and the round time to be the largest of the sums' quantiles of probability
///    0.5704^(1/m), m the workers used (the maximum of m balanced times). So a slow worker
///    whose single task would often be the round's last gets none, where the proxy
///    max_i a_i mu_i would give it one. That quantile rule misjudges skewed times (the largest
///    of m single lognormal times is far above their common quantile), so how many workers it
///    uses is checked against a learned shape: each time of a worker with 16 or more earlier
///    times, divided by its mean, enters a pool of the last 1,024 such ratios, from which the
///    law of a sum of a tasks is tabulated by resampling (the workers as a scale family: worker
///    i's sum is its mean times the pool's), once 1,024 ratios have come; then, every 4th
///    allocation, the rule's allocations restricted to the u workers it takes first, for u the
///    count chosen last, one neighbour (u - 1 and u + 1 in turn) and a scout that visits every
///    smaller count in turn, are compared by their expected round time under that shape (the
///    integral of 1 - prod_i P(S_i <= t), with the estimated means), and the best count is
///    played until the next comparison (not with a backlog: load-aware rounds keep the rule). A
///    worker gets at most twice as many tasks as it has times since its last change, so that an
///    estimate from a few lucky times costs one bounded round.
/// 3. Censored times (Policy::observe_censored: a copy stopped after t, because a backup
///    finished first or a race ended) enter the mean as time on test beyond a shift: the mean
///    used for worker i is s_i + (sum over finished times of (t - s_i) + sum over censored times
///    of (t - s_i)^+) / (number of finished times), s_i the smallest finished time since the
///    last change. That is the maximum-likelihood mean of shifted exponential times under
///    right-censoring (the paper's law), and of exponential times as s_i tends to 0: a worker
///    whose tasks get stopped is not taken for faster than it is, and a copy stopped before the
///    shift says nothing (racing stops slow members early in every round). Without censored
///    times it is the plain mean. The spread, the pooled cv, the shape and the change test use
///    finished times only (a censored time is a lower bound, not a draw). Censored times of a
///    worker not yet seen wait for its first finished one; a censored time at or below s_i when
///    it comes is dropped, and one that s_i later falls below counts from then on.
/// 4. Every observation feeds a change test per worker: the clipped log-times of its last 4,
///    8 and 16 tasks are compared with its older ones; a shift of more than
///    Options::change_threshold standard errors restarts the worker's statistics from those
///    recent tasks, so a worker that slows down loses its tasks within a round or two. A worker
///    back from more than 16 idle rounds (with at least 4 past times) is tested against its
///    history: the clipped standardised residuals of its new log-times are summed over every
///    suffix; below -4 sqrt(length) its statistics restart from that suffix (a worker that sped
///    up while idle is found); while they average below -0.5 it is probed again each round,
///    for at most 12 times.
///
/// 5. Plans (only with Options::race set): which plan of the round minimises the objective
///    E[wall] + p x E[worker time] (Options::objective, p = 1/n by default) is learned from the
///    estimates. Once the shape has 256 ratios, the quotas of step 2 (computed with the
///    planning means below, no posterior noise), with Options::hedge_quotas the same quotas
///    hedged (Plan::set_backups() with BackupMode::copies: a free quota worker starts a copy of
///    a task overdue at 4x its mean, the engines' backup rule; tried when the shape holds a
///    ratio that long, else no copy could start), and races of the m workers of smallest
///    planning mean (m on a doubling grid, refined around the best; with Options::race_restarts,
///    also the best race with restart budgets when the shape's tail is heavy) are simulated
///    under the learned laws, worker i's time being its planning mean times a ratio drawn from
///    the shape, on common draws (detail::PlanEvaluator), and the cheapest is played. A quota
///    plan that is not hedged leaves Plan::backups() unset: the driver's default applies. Later
///    evaluations are local steps (the quotas, hedged too, the race played and its neighbours
///    m -/+ m/8), as far apart as keeps
///    their cost per round at about a round's own, and at most as many rounds apart as have been
///    played; a detected change or a newly seen worker brings the next forward (to a quarter
///    of the gap) and makes it a full one.
///    - Planning means: a worker's mean of step 3 until it has raced 8 rounds since its last
///      change; then the mean under which the shape's renewal function M (tasks finished within
///      x mean times from a fresh start, tabulated from the shape) gives its finished tasks per
///      race round over its mean race window. For exponential times (M(x) = x) both are its
///      time on test over its finished tasks; for heavy tails that ratio is biased low in short
///      windows (lognormal sigma 1.5: about 0.45x the mean), which M corrects.
///    - While racing, the members are re-picked every round from the planning means (a member
///      whose censored times push its mean up leaves), the exploration credit grows by
///      Options::exploration_budget of the predicted objective and each exploratory racer costs
///      p x the predicted wall, and the shape learns only from quota rounds that are not
///      hedged (a race's or a hedged round's finished times are biased short: the long ones are
///      stopped).
///    - A racer that finishes far fewer tasks than its window predicts (rounds x M(window /
///      planning mean); an alarm needs at most a quarter of that count and a Poisson
///      log-probability below log 1e-8, divided by the shape's cv^2 when above 1) restarts its
///      statistics from that window: racing hides slowdowns from the test of step 4, whose
///      finished times no longer come.
///
/// Sound when: times of one worker are i.i.d. between changes with a finite variance; the
/// workers' laws are close to a scale family (time = work / speed: the same shape, different
/// means), which is what makes a pooled cv informative for a worker seen once or twice; a
/// change is a lasting shift of a worker's scale by a factor of about 1.5 or more.
///
/// Where it may fail:
/// - very different shapes across workers: a worker much more dispersed than the pool whose
///   first samples are unlucky looks slow with too much confidence and is retried late, and the
///   pooled shape judges every worker's sums alike;
/// - heavy tails (Pareto, outages, lognormal): the mean converges slowly; the pooled shape
///   chooses how many workers to use, not which tasks go where, so the allocation stays a few
///   % from EOFTA's (lognormal times of cv 3: about 1.08x); the change test clips log-times at
///   3 standard deviations, so rare huge times do not trigger it;
/// - exploration assumes no order of the workers, and is budgeted: with many workers and a
///   short horizon (n / B large, K small) only the workers its rules reach are tried, in index
///   order, and the fast workers of a large cluster may be found late (in a fungible race the
///   opening round of step 1 finds many of them at once);
/// - adversarial or frequent changes (a worker that alternates faster than the test's window).
///
/// Random draws come from Options::seed only: the same seed and the same observations give the
/// same allocations, bit for bit. Cost per round: O(n) for the draws (a worker far above the
/// candidates costs one uniform) and O(B log B) for the allocation on the B best candidates,
/// plus, every 4th round, two or three expected round times under the shape (O(48 m), m workers
/// used); per observation O(1) (the change test reads at most 16 stored times), plus a rebuild
/// of the shape's tables every 8,192 ratios (O(32 x 512)). Measured in
/// docs/beyond-the-paper.md. With Options::race, a race round costs O(n) (the members by
/// planning mean) and the evaluations about as much again, amortised (docs/frontier.md).
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
    /// The fraction of the predicted wall time that budgeted exploratory tasks (unseen and idle
    /// workers) may cost beyond the predicted round time, in [0, 1). 0: no budgeted probes;
    /// unseen workers are still tried when worth it or free, and idle ones when the posterior
    /// draws them.
    double exploration_budget = 0.02;

    /// How ata-auto may race (step 5): std::nullopt allocates only (every plan is quotas);
    /// RaceKind::fungible when tasks are interchangeable samples (stochastic gradients), the
    /// kind of `race:M`; RaceKind::indexed when every task index must run (a race then claims
    /// them one by one). A driver that runs no races needs nullopt. With a race kind, drive
    /// the policy with plan() (allocate() throws on a race); on tails heavier than exponential
    /// its races may carry restart budgets unless race_restarts is false.
    std::optional<RaceKind> race;
    /// Whether its races may carry restart budgets (step 5: tried on tails heavier than
    /// exponential). Every engine runs them (docs/design.md); false keeps the races without.
    /// Read only with race set.
    bool race_restarts = true;
    /// Whether its quotas may be hedged (step 5: quotas with backup copies of overdue tasks,
    /// Plan::set_backups() with BackupMode::copies, tried when the learned shape has times
    /// long enough to make a copy overdue). Every engine runs them; false leaves every quota
    /// round's backups to the driver's default. Read only with race set.
    bool hedge_quotas = true;
    /// What a plan costs: wall + p x worker time (p = 1/n by default). Read only with race set.
    Objective objective;

    Options& set_seed(std::uint64_t value) noexcept { seed = value; return *this; }
    Options& set_race(std::optional<RaceKind> value) noexcept { race = value; return *this; }
    Options& set_objective(const Objective& value) noexcept { objective = value; return *this; }
    Options& set_race_restarts(bool value) noexcept { race_restarts = value; return *this; }
    Options& set_hedge_quotas(bool value) noexcept {
      hedge_quotas = value;
      return *this;
    }
    Options& set_exploration(double value) noexcept { exploration = value; return *this; }
    Options& set_change_threshold(double value) noexcept { change_threshold = value; return *this; }
    Options& set_exploration_budget(double value) noexcept {
      exploration_budget = value;
      return *this;
    }
  };

  /// The estimated objective of one candidate plan per round (step 5).
  struct PlanEstimate {
    std::size_t racers = 0;  ///< 0: the quotas; m: a race of the m fastest
    double wall = 0.0;
    double work = 0.0;
    double objective = 0.0;  ///< wall + p x work
    /// Restart budget in multiples of each racer's mean (+infinity: none).
    double restart_after = std::numeric_limits<double>::infinity();
    /// Quotas with backup copies of overdue tasks (BackupMode::copies, the default threshold
    /// and copies); false for the plain quotas and for races.
    bool hedged = false;
  };

  /// Throws ata::InvalidArgument for workers = 0, exploration not finite and > 0, a
  /// change_threshold that is NaN or <= 0, an exploration_budget outside [0, 1), or an invalid
  /// work price.
  AtaAutoPolicy(std::size_t workers, const Options& options);
  /// With the default Options (seed 0). Throws ata::InvalidArgument for workers = 0.
  explicit AtaAutoPolicy(std::size_t workers);
  ~AtaAutoPolicy() override;

  [[nodiscard]] std::string_view name() const noexcept override { return "ata-auto"; }
  [[nodiscard]] const Options& options() const noexcept { return options_; }
  /// True: the change test and the idle-worker probes look at each time in order (a ring of
  /// the last log-times, a test that restarts the statistics from a suffix), which no summary
  /// of a chunk can replay. The runtime therefore feeds it every task's time: O(B) work under
  /// the policy's lock after each batch, where the other policies cost O(n) (docs/runtime.md).
  [[nodiscard]] bool needs_every_sample() const noexcept override { return true; }

  /// The mean the learner uses for `worker`: over its samples since its last detected change
  /// (0 while unseen), censored times included (step 3 above). Throws
  /// ata::InvalidArgument when out of range.
  [[nodiscard]] double estimated_mean(std::size_t worker) const;
  /// The samples behind estimated_mean(worker). Throws ata::InvalidArgument when out of range.
  [[nodiscard]] std::size_t estimated_samples(std::size_t worker) const;
  /// The coefficient of variation pooled over all workers (1 until two samples of one worker).
  [[nodiscard]] double pooled_cv() const noexcept;
  /// How many times a change was detected (and a worker's statistics restarted), probes of idle
  /// workers included.
  [[nodiscard]] std::size_t changes_detected() const noexcept { return changes_detected_; }
  /// How many of those came from probes of idle workers (a worker that sped up while idle).
  [[nodiscard]] std::size_t rediscoveries() const noexcept { return rediscoveries_; }
  /// The racers of the plan chosen at the last evaluation (0: quotas; always 0 without
  /// Options::race).
  [[nodiscard]] std::size_t chosen_racers() const noexcept { return racers_; }
  /// Rounds played per plan: entry 0 counts quota rounds, entry m races of m chosen workers
  /// (exploratory racers not counted); n + 1 entries.
  [[nodiscard]] std::span<const std::size_t> rounds_by_racers() const noexcept {
    return rounds_by_racers_;
  }
  /// The restart budget of the race chosen at the last evaluation, in multiples of each racer's
  /// planning mean (+infinity: none).
  [[nodiscard]] double chosen_restart() const noexcept { return restart_; }
  /// Race rounds played with restart budgets.
  [[nodiscard]] std::size_t restart_rounds() const noexcept { return restart_rounds_; }
  /// Whether the plan chosen at the last evaluation is the hedged quotas.
  [[nodiscard]] bool chosen_hedged() const noexcept { return hedged_; }
  /// Quota rounds played hedged (with backup copies), among rounds_by_racers()[0].
  [[nodiscard]] std::size_t hedged_rounds() const noexcept { return hedged_rounds_; }
  /// Every candidate's estimate at the last evaluation (empty before the first), quotas first.
  [[nodiscard]] std::span<const PlanEstimate> last_evaluation() const noexcept {
    return last_evaluation_;
  }
  /// How many evaluations of the plans were made.
  [[nodiscard]] std::size_t evaluations() const noexcept { return evaluations_; }
  /// Exploratory tasks given so far (the first round's included).
  [[nodiscard]] std::size_t exploratory_tasks() const noexcept { return exploratory_tasks_; }
  /// The most workers that get an exploratory task in one round of `batch` tasks:
  /// ceil(sqrt(batch) / 2), and at most batch - 1 once a worker has been observed.
  [[nodiscard]] static std::size_t explored_per_round(std::size_t batch) noexcept;

 private:
  static constexpr std::size_t kWindow = 16;  // recent times kept per worker for the change test
  static constexpr std::size_t kRecent = 32;  // the workers seen last, for more_unseen()

  // A worker's times since its last change: count, mean and squared deviations of the times
  // and of their logarithms (Welford), and the last kWindow of both in a ring.
  struct Worker {
    std::size_t count = 0;
    double mean = 0.0;
    double m2 = 0.0;
    double log_mean = 0.0;
    double log_m2 = 0.0;
    double relative_m2 = 0.0;  // m2 / mean^2, as last added to the pool
    double shift = 0.0;        // the smallest finished time (0 while unseen)
    double censored = 0.0;     // sum and count of the censored times kept (step 3)
    std::size_t censored_count = 0;
  };

  void choose_plan(std::size_t batch, Plan& out) override;
  void choose(std::size_t batch, Allocation& out) override;
  void evaluate_plans(std::size_t batch);
  void race(std::size_t batch, Plan& out);
  void open_race(Plan& out);
  void test_exposure(std::size_t worker);
  void close_window(std::size_t worker);
  [[nodiscard]] double planning_mean(std::size_t worker);
  void learn(std::size_t worker, double seconds) override;
  void learn_censored(std::size_t worker, double seconds) override;
  [[nodiscard]] static double corrected_mean(const Worker& w) noexcept;

  void pick_explored(std::size_t batch);
  double plan_quotas(std::size_t tasks);  // not plan(): that would hide Policy::plan()
  double replan(std::size_t tasks);
  void commit(std::size_t tasks, Allocation& out);
  std::size_t more_unseen(std::size_t batch, std::size_t tasks, double predicted);
  void remember_first_time(std::size_t worker, double seconds);
  void touch(std::size_t worker);
  bool probe_result(std::size_t worker, double residual);

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
  std::size_t rediscoveries_ = 0;
  std::size_t exploratory_tasks_ = 0;

  // Exploration. Workers in a list by their last observation, least recent first (prev_/next_,
  // n = none): unseen ones, in index order, then idle ones, oldest first.
  std::vector<std::size_t> prev_;
  std::vector<std::size_t> next_;
  std::size_t oldest_;
  std::size_t newest_;
  std::vector<std::size_t> last_round_;  // round of each worker's last observation (0: never)
  std::vector<std::size_t> last_allocated_;  // last round that planned tasks for it (0: never)
  // The predicted round time of a worker's outstanding exploratory task (negative: none).
  std::vector<double> probe_level_;
  // A probed idle worker's sequential test: the log-mean and standard deviation of its history
  // before the first probe, the sum of the clipped standardised residuals of the times since,
  // and 1 + their number (0: not under test).
  std::vector<std::pair<double, double>> probe_reference_;
  std::vector<double> probe_sum_;
  std::vector<unsigned char> probe_count_;
  std::vector<std::size_t> follow_ups_;   // probed workers to probe again
  std::vector<std::size_t> explored_;     // this round's exploratory workers
  std::vector<unsigned char> exploring_;  // 1 for them, so that the draws skip them
  double credit_ = 0.0;                   // exploration budget left (model time)
  double round_overshoot_ = 0.0;          // largest exploratory time beyond its prediction
  // (worker, first time) of the kRecent workers seen last, in a ring.
  std::vector<std::pair<std::size_t, double>> recent_;
  std::size_t recent_next_ = 0;
  std::vector<double> recent_times_;  // scratch of more_unseen()
  // Pooled over workers with >= 2 samples: sum of m2 / mean^2, of log_m2, and of (count - 1).
  double pool_relative_m2_ = 0.0;
  double pool_log_m2_ = 0.0;
  double pool_dof_ = 0.0;

  std::vector<std::pair<double, std::size_t>> heap_;  // (log draw, worker) of the candidates
  std::vector<double> candidate_means_;
  std::vector<double> candidate_cv2_;
  std::vector<std::size_t> candidate_caps_;
  std::vector<double> candidate_backlog_;  // load-aware rounds: each candidate's backlog
  std::vector<double> candidate_estimates_;  // estimated means (the draws' centres)
  std::vector<std::size_t> candidate_tasks_;
  std::unique_ptr<detail::RoundTimeAllocator> allocator_;
  std::unique_ptr<detail::TaskTimeShape> shape_;  // the pooled shape of the task times
  RoundRobinSpread spread_;
  std::uint64_t random_state_;  // the posterior draws' generator (SplitMix64)

  // Plans (step 5).
  std::unique_ptr<detail::PlanEvaluator> evaluator_;
  std::unique_ptr<detail::RoundTimeAllocator> evaluation_allocator_;  // quotas without noise
  std::size_t racers_ = 0;
  double race_wall_ = 0.0;       // the chosen race's predicted wall per round
  double race_objective_ = 0.0;  // and objective
  bool racing_ = false;          // the round being observed is a race
  bool restarting_ = false;      // with restart budgets
  bool hedged_ = false;          // the chosen plan is the hedged quotas
  bool hedging_ = false;         // the round being observed is hedged quotas
  double restart_ = std::numeric_limits<double>::infinity();  // the chosen budget (x mean)
  std::size_t restart_rounds_ = 0;
  std::size_t hedged_rounds_ = 0;
  std::size_t evaluated_at_ = 0;     // round of the last evaluation
  std::size_t next_evaluation_ = 0;  // round of the next one
  std::size_t evaluation_gap_ = 0;   // rounds between them, without changes
  bool full_evaluation_ = true;      // the next evaluation tries the full grid, not a local step
  std::size_t changes_at_evaluation_ = 0;
  std::size_t unseen_at_evaluation_ = 0;
  std::size_t evaluations_ = 0;
  std::vector<std::size_t> rounds_by_racers_;
  std::vector<PlanEstimate> last_evaluation_;
  std::vector<std::size_t> order_;  // scratch: known workers by estimated mean
  std::vector<std::pair<double, std::size_t>> keyed_;  // scratch of race(): (mean, worker)
  std::vector<double> sorted_means_;
  std::vector<std::size_t> sorted_quotas_;
  std::vector<double> rule_means_;  // per sorted worker: its Policy::stats() mean (hedging)
  // A racer's time on test, finished tasks and rounds since its window opened (the exposure
  // test), and since its last change (its planning mean).
  std::vector<double> exposure_;
  std::vector<std::size_t> exposure_finished_;
  std::vector<std::size_t> exposure_rounds_;
  std::vector<std::size_t> race_rounds_;
  std::vector<double> race_exposure_;
  std::vector<std::size_t> race_finished_;
  std::vector<double> planned_;  // planning means, cached (NaN: stale)
};

}  // namespace ata

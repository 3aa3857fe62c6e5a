#pragma once
/// @file
/// Which workers an asynchronous SGD stream (Ringmaster ASGD, threshold R) keeps busy: the m
/// fastest, m minimising Ringmaster's time bound, from known or learned mean task times.

#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <vector>

namespace ata {

class AtaAutoPolicy;

/// Ringmaster ASGD's time bound for R consecutive updates with the m fastest workers
/// (docs/async.md): t(m) = (1/m sum_{i<m} 1/tau_i)^{-1} (1 + R/m) = (R + m) / sum_{i<m} 1/tau_i,
/// `sorted_means` ascending. Throws ata::InvalidArgument for m = 0 or m > its size, R = 0, or a
/// mean among the first m that is NaN, infinite or <= 0.
[[nodiscard]] double ringmaster_time_bound(std::span<const double> sorted_means, std::size_t m,
                                           std::size_t threshold);

/// The workers of least bound: indices, ascending, of the m fastest by `means`, m the smallest
/// minimiser of ringmaster_time_bound() (ties of means by lower index). With `bound_slack`
/// s > 0, m is the largest whose bound is at most (1 + s) x the least (see
/// RingmasterSelection::Options::bound_slack). Throws ata::InvalidArgument for no means, R = 0,
/// a mean that is NaN, infinite or <= 0, or a slack that is NaN, infinite or negative.
[[nodiscard]] std::vector<std::size_t> ringmaster_fastest(std::span<const double> means,
                                                          std::size_t threshold,
                                                          double bound_slack = 0.0);

/// The learned selection of a Ringmaster stream ("ringmaster-ata"). It knows nothing of the
/// laws at the start; the engine reports every task's duration, complete or censored (stopped
/// at the delay threshold, or still running when the stream ends), and asks which workers to
/// keep busy.
///
/// @code
/// ata::RingmasterSelection selection(/*workers=*/51, /*threshold=*/16);
/// for (std::size_t w : selection.select()) start_task_on(w);   // every worker at first
/// selection.observe(3, 57.5, ata::RingmasterSelection::Outcome::complete);
/// selection.observe(40, 210.0, ata::RingmasterSelection::Outcome::censored);
/// @endcode
///
/// select() returns ringmaster_fastest() of the estimated means, plus every worker not yet
/// observed (it must be tried) and the worker under an exploratory probe, if any:
/// - a worker with a complete time: ATA-Auto's mean (AtaAutoPolicy::estimated_mean(): the
///   censored times as time on test beyond its shift, and its change test restarting the
///   statistics when the worker's speed shifts);
/// - a worker with censored times only: its total censored time T over
///   Options::censored_evidence e (2). An exponential worker of mean t finishes within T with
///   probability 1 - exp(-T / t), so it leaves the selection once T exceeds e times the bound t
///   it would join under: 1 - exp(-e) sure (86%) that it is slower; a fast worker stopped by
///   bad luck comes back through the probes below. A worker stopped every time so drops out
///   after a few stops instead of being stopped for ever. e trades worker time for wall time
///   (docs/async.md: e = 1 spends the least work on cifar but selects too few workers on sqrt,
///   e = 3 the reverse). These censored times are not handed to the learner: its statistics
///   start at the worker's first complete time (a worker slow then fast, or unlucky at the
///   start, is not held to them);
/// - a worker whose censored time since its last complete one exceeds
///   Options::censored_alarm x its mean (an exponential worker of that mean survives that
///   long with probability exp(-censored_alarm): 1e-8 by default) has slowed down unseen by
///   the change test, which reads complete times only: it is estimated as one with censored
///   times only until its next complete time.
///
/// Exploration: each observed second earns Options::exploration_budget seconds of credit;
/// when the credit covers the estimated mean of the idle worker observed least recently, that
/// worker is probed: selected until its next observation. So a worker that sped up while idle
/// is found, at about that fraction of the worker time.
///
/// Cost: observe() O(1) amortised (ATA-Auto's learning); select() O(n log n) after an
/// observation, O(1) otherwise. Not thread-safe: one owner (the stream's driver) calls it.
class RingmasterSelection {
 public:
  /// How a task ended.
  enum class Outcome { complete, censored };

  struct Options {
    /// The share of observed worker time spent probing idle workers, in [0, 1).
    double exploration_budget = 0.02;
    /// See the class comment; both finite and > 0.
    double censored_alarm = 18.420680743952367;  // -log(1e-8)
    double censored_evidence = 2.0;
    /// ATA-Auto's change test threshold (AtaAutoPolicy::Options::change_threshold).
    double change_threshold = 6.0;
    /// The selection keeps the most workers whose bound is within this share of the least
    /// (ringmaster_fastest()), finite and >= 0. The bound is an upper bound of the time, flat
    /// near its minimum: on cifar (R = 16, 10 seeds, docs/async.md) the learned selection took
    /// 1.082x greedy Ringmaster's time with the minimiser, 1.046x with 1 % of slack (a worker
    /// or so more) at 4.8x less worker time; larger slacks spend more than ata-auto's rounds.
    double bound_slack = 0.01;

    Options& set_exploration_budget(double value) noexcept { exploration_budget = value; return *this; }
    Options& set_censored_alarm(double value) noexcept { censored_alarm = value; return *this; }
    Options& set_censored_evidence(double value) noexcept { censored_evidence = value; return *this; }
    Options& set_change_threshold(double value) noexcept { change_threshold = value; return *this; }
    Options& set_bound_slack(double value) noexcept { bound_slack = value; return *this; }
  };

  /// Throws ata::InvalidArgument for workers = 0, threshold R = 0, or an option out of range.
  RingmasterSelection(std::size_t workers, std::size_t threshold, const Options& options);
  RingmasterSelection(std::size_t workers, std::size_t threshold);
  ~RingmasterSelection();
  RingmasterSelection(RingmasterSelection&&) noexcept;
  RingmasterSelection& operator=(RingmasterSelection&&) noexcept;

  [[nodiscard]] std::size_t workers() const noexcept { return last_seen_.size(); }
  [[nodiscard]] std::size_t threshold() const noexcept { return threshold_; }

  /// Records one task of `worker` that ran `seconds`, complete or censored. Throws
  /// ata::InvalidArgument for a worker out of range or seconds NaN, infinite or negative.
  void observe(std::size_t worker, double seconds, Outcome outcome);

  /// The workers to keep busy, ascending; never empty.
  [[nodiscard]] std::span<const std::size_t> select();
  /// Whether select() holds `worker` (as of the last select()).
  [[nodiscard]] bool selected(std::size_t worker) const;

  /// The mean select() uses for `worker`; 0 while it has not been observed. Throws
  /// ata::InvalidArgument when out of range.
  [[nodiscard]] double estimated_mean(std::size_t worker) const;
  /// The worker under an exploratory probe (as of the last select()), if any.
  [[nodiscard]] std::optional<std::size_t> probing() const noexcept;
  /// Probes started so far.
  [[nodiscard]] std::size_t probes() const noexcept { return probes_; }
  /// Changes ATA-Auto's test detected, and censored-time alarms raised.
  [[nodiscard]] std::size_t changes_detected() const noexcept;
  [[nodiscard]] std::size_t censored_alarms() const noexcept { return censored_alarms_; }

 private:
  void recompute();

  std::size_t threshold_;
  Options options_;
  std::unique_ptr<AtaAutoPolicy> learner_;
  std::vector<double> censored_only_;      // total censored time while no complete time counts
  std::vector<double> censored_since_;     // censored time since the last complete one
  std::vector<unsigned char> alarmed_;     // estimated from censored time until a complete one
  std::vector<std::size_t> last_seen_;     // observation count at the last one (0: never)
  std::size_t observations_ = 0;
  double credit_ = 0.0;
  std::size_t probing_;                    // workers(): none
  std::size_t probes_ = 0;
  std::size_t censored_alarms_ = 0;
  bool stale_ = true;
  std::vector<std::size_t> selected_;
  std::vector<unsigned char> is_selected_;
  std::vector<double> means_;              // scratch of recompute()
  std::vector<std::size_t> known_;
};

}  // namespace ata

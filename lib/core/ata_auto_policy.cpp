#include "ata/core/ata_auto_policy.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>

#include "ata/core/error.hpp"
#include "core/checks.hpp"
#include "core/normal_sampler.hpp"
#include "core/plan_evaluator.hpp"
#include "core/round_time_allocator.hpp"
#include "core/task_time_shape.hpp"

namespace ata {

namespace {

// Prior of the pooled statistics, worth this many degrees of freedom: cv 1 (exponential times)
// and a log-time variance of 1, overruled by the data within the first rounds.
constexpr double kPriorDof = 2.0;
constexpr double kPriorCv2 = 1.0;
constexpr double kPriorLogVariance = 1.0;
// A worker's own cv (and log-time variance) is shrunk towards the pooled one with this weight:
// with few samples the pool decides, with many the worker's own data.
constexpr double kShrinkDof = 10.0;
// The change test: suffixes of the last 4, 8 and 16 times; log-times clipped at 3 standard
// deviations so that one huge time (heavy tail, outage) moves the statistic by 3 at most.
constexpr std::array<std::size_t, 3> kSuffixes{4, 8, 16};
constexpr double kClip = 3.0;
// Posterior draws: a worker this many standard deviations above the current candidates is
// drawn through the normal's tail beyond kFar (probability far_tail()) instead of a full draw.
constexpr double kFar = 4.0;
// centre_ of a worker never observed: skipped by the draws.
constexpr double kUnseen = std::numeric_limits<double>::infinity();
double far_tail() {
  static const double p = 0.5 * std::erfc(kFar / std::sqrt(2.0));
  return p;
}
// Zero durations are floored at this fraction of the worker's mean before taking logarithms.
constexpr double kLogFloor = 1e-6;
// Times of an idle worker: the clipped standardised log-residuals of its times against its
// history are summed over every suffix of at least kMinProbes; a sum below -kProbeAlarm
// sqrt(length) restarts its statistics from that suffix. The test goes on while the residuals
// average below -kKeepTesting, for at most kMaxProbes times, and needs a history of
// kMinHistory times. Measured on exponential times (whose log-times have a long left tail):
// 0.08% false alarms and 1.7 times per test, a tenfold speedup found with probability 0.94
// after ~6 times (or by a later test); shifted exponentials: none, and 2 times.
constexpr double kProbeAlarm = 4.0;
constexpr std::size_t kMinProbes = 2;
constexpr std::size_t kMaxProbes = 12;
constexpr double kKeepTesting = 0.5;
constexpr std::size_t kMinHistory = 4;
// A worker not observed for more than this many rounds is idle: its next times are tested
// against its history (the test above).
constexpr std::size_t kIdleRounds = 16;
// probe_count_ of a worker under test before its first time: 1, so that 0 means "not tested".
constexpr unsigned char kTesting = 1;
// A worker gets at most this many times its samples (since its last change) in one round, so
// that an estimate from a few lucky times costs a bounded round before it is corrected.
constexpr std::size_t kRamp = 2;
// The exploration credit never exceeds this many rounds' predicted time, so that a long quiet
// spell does not buy a burst of exploration later.
constexpr double kCreditRounds = 10.0;
constexpr double kNoProbe = -1.0;
// exp(-exp(-gamma)): the expected maximum of u balanced times is about their quantile of
// probability kGumbelMeanLevel^(1/u) (see RoundTimeAllocator).
constexpr double kGumbelMeanLevel = 0.5703760182828;

// A worker's time enters the pooled shape (as time / its mean) once the mean it is divided by
// rests on this many earlier times: with fewer, a heavy-tailed worker's mean is so uncertain
// that the ratios would widen the shape.
constexpr std::size_t kShapeMinSamples = 16;
// The shape's resampling generator is the seed's, moved this far along.
constexpr std::uint64_t kShapeStream = 0x3c6ef372fe94f82bULL;

// The plan evaluator's draws come from the seed moved this far along.
constexpr std::uint64_t kPlanStream = 0xa54ff53a5f1d36f1ULL;
// Evaluations of the plans are at least kMinEvaluationGap rounds apart; beyond that, as far
// apart as keeps their cost (task draws and heap steps) at about n + B per round, a round's own
// (step 5; measured in bench/policy_bench.cpp). A detected change brings the next one forward
// to 1/kChangePull of the gap after the last.
constexpr std::size_t kMinEvaluationGap = 16;
constexpr std::size_t kChangePull = 4;
// The evaluation's quotas: solve_with_shape() this many times, so that its count of workers
// (which moves one step per comparison, every fourth call) walks towards the shape's best.
constexpr std::size_t kEvaluationSolves = 16;
// The first evaluation waits for this many ratios of the shape, not for its tables (1,024):
// where racing wins, it wins by far (heavy tails: 13x less wall than quotas), and quota rounds
// spent learning cost more than a rougher first choice, which the next evaluations correct.
constexpr std::size_t kEvaluationRatios = 256;
// The exposure test (step 5): a racer's window is tested once it expects kExposureWindow
// finished tasks, and closes at 3 kExposureWindow; an alarm needs at most kExposureDeficit of
// the expected count and a Poisson (Chernoff) log-probability below kExposureAlarm, divided by
// the pooled cv^2 when above 1 (a renewal count's variance is about cv^2 times its mean).
constexpr double kExposureWindow = 16.0;
constexpr double kExposureDeficit = 0.25;
constexpr double kExposureAlarm = -18.42;  // log(1e-8)
// A worker's planning mean rests on its race rounds once it has this many.
constexpr std::size_t kMinRaceRounds = 8;
constexpr double kStale = std::numeric_limits<double>::quiet_NaN();  // of a planning mean

// Mixes the seed so that seeds 0, 1, 2, ... start far apart in SplitMix64's sequence.
std::uint64_t initial_state(std::uint64_t seed) noexcept {
  std::uint64_t s = seed ^ 0x6a09e667f3bcc909ULL;
  return detail::splitmix64(s);
}

AtaAutoPolicy::Options checked(const AtaAutoPolicy::Options& o) {
  detail::require_positive(o.exploration, "ata-auto exploration");
  if (std::isnan(o.change_threshold) || o.change_threshold <= 0.0) {
    throw InvalidArgument("ata-auto change_threshold must be > 0 (+inf turns the test off), got " +
                          detail::to_text(o.change_threshold));
  }
  if (!(o.exploration_budget >= 0.0 && o.exploration_budget < 1.0)) {
    throw InvalidArgument("ata-auto exploration_budget must be in [0, 1), got " +
                          detail::to_text(o.exploration_budget));
  }
  o.objective.check();
  return o;
}

}  // namespace

AtaAutoPolicy::AtaAutoPolicy(std::size_t workers, const Options& options)
    : Policy(workers),
      options_(checked(options)),
      workers_(workers),
      ring_(workers * kWindow, 0.0),
      log_ring_(workers * kWindow, 0.0),
      centre_(workers, kUnseen),
      pool_weight_(workers, 0.0),
      own_(workers, 0.0),
      stale_(workers, 0),
      unseen_(workers),
      prev_(workers),
      next_(workers),
      oldest_(0),
      newest_(workers - 1),
      last_round_(workers, 0),
      last_allocated_(workers, 0),
      probe_level_(workers, kNoProbe),
      probe_reference_(workers, {0.0, 1.0}),
      probe_sum_(workers, 0.0),
      probe_count_(workers, 0),
      exploring_(workers, 0),
      allocator_(std::make_unique<detail::RoundTimeAllocator>()),
      shape_(std::make_unique<detail::TaskTimeShape>(initial_state(options.seed ^ kShapeStream))),
      random_state_(initial_state(options.seed)),
      evaluator_(std::make_unique<detail::PlanEvaluator>(initial_state(options.seed ^ kPlanStream))),
      evaluation_allocator_(std::make_unique<detail::RoundTimeAllocator>()),
      rounds_by_racers_(workers + 1, 0),
      exposure_(workers, 0.0),
      exposure_finished_(workers, 0),
      exposure_rounds_(workers, 0),
      race_rounds_(workers, 0),
      race_exposure_(workers, 0.0),
      race_finished_(workers, 0),
      planned_(workers, kStale) {
  for (std::size_t i = 0; i < workers; ++i) {
    prev_[i] = i == 0 ? workers : i - 1;
    next_[i] = i + 1;
  }
}

AtaAutoPolicy::AtaAutoPolicy(std::size_t workers) : AtaAutoPolicy(workers, Options{}) {}

AtaAutoPolicy::~AtaAutoPolicy() = default;

std::size_t AtaAutoPolicy::explored_per_round(std::size_t batch) noexcept {
  return static_cast<std::size_t>(std::ceil(std::sqrt(static_cast<double>(batch)) / 2.0));
}

double AtaAutoPolicy::estimated_mean(std::size_t worker) const {
  detail::require_worker_index(worker, workers());
  return corrected_mean(workers_[worker]);
}

double AtaAutoPolicy::corrected_mean(const Worker& w) noexcept {
  if (w.count == 0) return 0.0;
  const double beyond = w.censored - static_cast<double>(w.censored_count) * w.shift;
  return w.mean + std::max(beyond, 0.0) / static_cast<double>(w.count);
}

std::size_t AtaAutoPolicy::estimated_samples(std::size_t worker) const {
  detail::require_worker_index(worker, workers());
  return workers_[worker].count;
}

double AtaAutoPolicy::pooled_cv2() const noexcept {
  return (kPriorDof * kPriorCv2 + pool_relative_m2_) / (kPriorDof + pool_dof_);
}

double AtaAutoPolicy::pooled_cv() const noexcept { return std::sqrt(pooled_cv2()); }

double AtaAutoPolicy::pooled_log_variance() const noexcept {
  return (kPriorDof * kPriorLogVariance + pool_log_m2_) / (kPriorDof + pool_dof_);
}

// A worker joins the pool with two samples and a positive mean (zero times carry no scale).
void AtaAutoPolicy::pool_remove(std::size_t worker) {
  const Worker& w = workers_[worker];
  if (w.count < 2 || w.mean <= 0.0) return;
  pool_relative_m2_ -= w.relative_m2;
  pool_log_m2_ -= w.log_m2;
  pool_dof_ -= static_cast<double>(w.count - 1);
}

void AtaAutoPolicy::pool_add(std::size_t worker) {
  Worker& w = workers_[worker];
  if (w.count < 2 || w.mean <= 0.0) return;
  w.relative_m2 = w.m2 / (w.mean * w.mean);
  pool_relative_m2_ += w.relative_m2;
  pool_log_m2_ += w.log_m2;
  pool_dof_ += static_cast<double>(w.count - 1);
}

void AtaAutoPolicy::add(std::size_t worker, double seconds, double log_seconds) {
  Worker& w = workers_[worker];
  w.shift = w.count == 0 ? seconds : std::min(w.shift, seconds);
  planned_[worker] = kStale;
  ring_[worker * kWindow + w.count % kWindow] = seconds;
  log_ring_[worker * kWindow + w.count % kWindow] = log_seconds;
  ++w.count;
  const double inverse_k = 1.0 / static_cast<double>(w.count);
  const double delta = seconds - w.mean;
  w.mean += delta * inverse_k;
  w.m2 += delta * (seconds - w.mean);
  const double log_delta = log_seconds - w.log_mean;
  w.log_mean += log_delta * inverse_k;
  w.log_m2 += log_delta * (log_seconds - w.log_mean);
  stale_[worker] = 1;
}

// The posterior variance of log mu_i is c^2 cv_i^2 / K_i, cv_i^2 = (s pool + r_i) / (s + K_i - 1)
// with r_i = m2_i / mean_i^2 and s = kShrinkDof: the pooled cv^2 alone while K_i = 1.
void AtaAutoPolicy::refresh(std::size_t worker) {
  const Worker& w = workers_[worker];
  const double k = static_cast<double>(w.count);
  const double scale2 = options_.exploration * options_.exploration;
  // -inf for a mean of 0: drawn as 0, the fastest possible.
  centre_[worker] = std::log(corrected_mean(w));
  if (w.count >= 2 && w.mean > 0.0) {
    const double per = scale2 / ((kShrinkDof + k - 1.0) * k);
    pool_weight_[worker] = kShrinkDof * per;
    own_[worker] = w.relative_m2 * per;
  } else {
    pool_weight_[worker] = scale2 / k;
    own_[worker] = 0.0;
  }
  stale_[worker] = 0;
}

void AtaAutoPolicy::learn(std::size_t worker, double seconds) {
  Worker& w = workers_[worker];
  if (w.count == 0) {
    --unseen_;
    // Not a race's: its finished times are the short ones, and would make unseen workers
    // look cheap to try (more_unseen()).
    if (!racing_) remember_first_time(worker, seconds);
  }
  // Floored relative to the mean with this sample, so that zero times have a finite logarithm.
  const double k = static_cast<double>(w.count);
  const double scale = (w.mean * k + seconds) / (k + 1.0);
  const double log_seconds =
      std::log(std::max({seconds, kLogFloor * scale, std::numeric_limits<double>::min()}));
  // A worker back from a long idle spell, whether a probe or the exploitation gave it the task,
  // is tested against its history: it may have changed while nobody watched.
  if (probe_count_[worker] == 0 && w.count >= kMinHistory && w.mean > 0.0 &&
      last_round_[worker] + kIdleRounds < round()) {
    // The residual's variance: the log-time's, plus that of the estimated log-mean. The pooled
    // log-variance, not the worker's: an idle worker has few times, and one tiny time (log-times
    // have a long left tail) would inflate its own estimate and hide a change for many probes.
    const double variance = pooled_log_variance() * (1.0 + 1.0 / k);
    probe_reference_[worker] = {w.log_mean, std::sqrt(variance)};
    probe_count_[worker] = kTesting;
  }
  touch(worker);
  if (probe_level_[worker] != kNoProbe) {
    round_overshoot_ = std::max(round_overshoot_, seconds - probe_level_[worker]);
    probe_level_[worker] = kNoProbe;
  }
  // Every time of a worker under test counts, whether a probe or an exploited task gave it.
  const bool testing = probe_count_[worker] > 0;
  double residual = 0.0;
  if (testing) {
    const auto [centre, sd] = probe_reference_[worker];
    residual = std::clamp((log_seconds - centre) / sd, -kClip, kClip);
  }
  // Out of sample (the mean before this time), so that a long time is not shrunk by itself; not
  // while the worker is under test, whose mean may be that of its old speed; not in a race or
  // hedged quotas, whose finished times are the short ones (step 5: a long copy is stopped when
  // another finishes first).
  if (racing_) {
    if (!restarting_) {  // restarts finish more tasks than the renewal function counts
      race_exposure_[worker] += seconds;
      ++race_finished_[worker];
    }
    exposure_[worker] += seconds;
    ++exposure_finished_[worker];
  } else if (!testing && !hedging_ && w.count >= kShapeMinSamples) {
    const double mean = corrected_mean(w);
    if (mean > 0.0) shape_->add(seconds / mean);
  }
  pool_remove(worker);
  add(worker, seconds, log_seconds);
  pool_add(worker);
  if (testing && probe_result(worker, residual)) return;
  if (options_.change_threshold < std::numeric_limits<double>::infinity()) test_for_change(worker);
}

// A censored time t (the task ran at least t) adds (t - shift)^+ to the worker's time on test and
// nothing to its count (step 3 of the class comment). Only the posterior centre moves; the cv,
// the pool and the change test see finished times only. In a race it also feeds the exposure
// test, and counts as an observation for the exploration's order (a probe stopped unfinished is
// not probed again at once).
void AtaAutoPolicy::learn_censored(std::size_t worker, double seconds) {
  Worker& w = workers_[worker];
  planned_[worker] = kStale;
  if (w.count == 0 || seconds > w.shift) {
    w.censored += seconds;
    ++w.censored_count;
    if (w.count > 0) stale_[worker] = 1;  // an unseen worker stays unseen
  }
  if (racing_) {
    touch(worker);
    if (!restarting_) race_exposure_[worker] += seconds;
    exposure_[worker] += seconds;
    test_exposure(worker);
  }
}

// A racer that finished far fewer tasks than its time on test predicts has slowed down: its
// statistics restart from the window, its time on test over its finished tasks (or, with none,
// the time on test taken as one task: a lower bound). See step 5 of the class comment.
void AtaAutoPolicy::test_exposure(std::size_t worker) {
  const double mean = planning_mean(worker);
  if (!(mean > 0.0) || exposure_rounds_[worker] == 0) return;
  const auto rounds = static_cast<double>(exposure_rounds_[worker]);
  const double expected = rounds * evaluator_->renewals(exposure_[worker] / rounds / mean);
  if (expected < kExposureWindow) return;
  const auto finished = static_cast<double>(exposure_finished_[worker]);
  if (finished <= kExposureDeficit * expected) {
    double log_p = finished - expected;
    if (finished > 0.0) log_p += finished * std::log(expected / finished);
    if (log_p / std::max(1.0, evaluator_->shape_cv2()) < kExposureAlarm) {
      const std::size_t keep = std::min({exposure_finished_[worker], kWindow, workers_[worker].count});
      double kept = 0.0;
      const std::size_t count = workers_[worker].count;
      for (std::size_t j = 1; j <= keep; ++j) kept += ring_[worker * kWindow + (count - j) % kWindow];
      const double on_test = exposure_[worker];
      if (keep > 0) {
        restart(worker, keep);
        Worker& w = workers_[worker];
        w.censored = std::max(on_test - kept, 0.0);  // counted whole: no shift comes off it
        w.censored_count = 0;
      } else {
        pool_remove(worker);
        workers_[worker] = Worker{};
        add(worker, on_test, std::log(on_test));
        pool_add(worker);
        ++changes_detected_;
      }
      race_rounds_[worker] = exposure_rounds_[worker];  // restart() cleared them
      race_exposure_[worker] = on_test;
      race_finished_[worker] = exposure_finished_[worker];
      planned_[worker] = kStale;
      close_window(worker);
      return;
    }
  }
  if (expected >= 3.0 * kExposureWindow) close_window(worker);
}

void AtaAutoPolicy::close_window(std::size_t worker) {
  exposure_[worker] = 0.0;
  exposure_finished_[worker] = 0;
  exposure_rounds_[worker] = 0;
}

// The mean that plans use: from the worker's race rounds, once it has kMinRaceRounds of them, the
// mean under which the shape's renewal function gives its finished tasks per round over its mean
// window (a race's time on test over its finished tasks is biased low for heavy tails: in short
// windows most finished tasks are short ones); else the estimated mean. Cached: planned_[worker]
// is NaN when stale.
double AtaAutoPolicy::planning_mean(std::size_t worker) {
  double& planned = planned_[worker];
  if (!std::isnan(planned)) return planned;
  planned = corrected_mean(workers_[worker]);
  if (race_rounds_[worker] >= kMinRaceRounds && evaluator_->has_renewals()) {
    const auto rounds = static_cast<double>(race_rounds_[worker]);
    // None finished: half a task, a bound that stays finite.
    const double per_round = std::max(static_cast<double>(race_finished_[worker]), 0.5) / rounds;
    planned = race_exposure_[worker] / rounds / evaluator_->windows_for(per_round);
  }
  return planned;
}

// Adds one residual to the worker's sequential test. Every suffix of the test's times (at least
// kMinProbes) is a candidate new regime, so a test that began just before a change still finds
// it; the statistics restart from the most significant suffix. Returns true when they did.
bool AtaAutoPolicy::probe_result(std::size_t worker, double residual) {
  probe_sum_[worker] += residual;
  const std::size_t probes = probe_count_[worker]++;  // kTesting (1) counts no time yet
  const auto [centre, sd] = probe_reference_[worker];
  const double* logs = &log_ring_[worker * kWindow];
  const std::size_t count = workers_[worker].count;
  double suffix = 0.0;
  double most = 0.0;  // the most significant suffix's sum / sqrt(length), below -kProbeAlarm
  std::size_t keep = 0;
  for (std::size_t m = 1; m <= probes; ++m) {
    suffix += std::clamp((logs[(count - m) % kWindow] - centre) / sd, -kClip, kClip);
    const double score = suffix / std::sqrt(static_cast<double>(m));
    if (m >= kMinProbes && score < -kProbeAlarm && score < most) {
      most = score;
      keep = m;
    }
  }
  const double continue_below = -kKeepTesting * static_cast<double>(probes);
  if (keep > 0 || probe_sum_[worker] >= continue_below || probes >= kMaxProbes) {
    probe_sum_[worker] = 0.0;
    probe_count_[worker] = 0;
    if (keep > 0) {
      restart(worker, keep);
      ++rediscoveries_;
    }
    return keep > 0;
  }
  follow_ups_.push_back(worker);  // clearly faster so far, not yet significant: probe again
  return false;
}

// Moves the worker to the newest end of the list of last observations.
void AtaAutoPolicy::touch(std::size_t worker) {
  last_round_[worker] = round();
  if (newest_ == worker) return;
  const std::size_t none = workers();
  const std::size_t before = prev_[worker];
  const std::size_t after = next_[worker];  // not none: the worker is not the newest
  if (before == none) {
    oldest_ = after;
  } else {
    next_[before] = after;
  }
  prev_[after] = before;
  prev_[worker] = newest_;
  next_[worker] = none;
  next_[newest_] = worker;
  newest_ = worker;
}

// Compares the last m log-times (m = 4, 8, 16) with the worker's older ones: the sum of their
// deviations from the older mean, each clipped at kClip older standard deviations, divided by its
// standard error. Under no change a deviation beyond the threshold (6 by default) is extremely
// rare even for heavy-tailed times, because the clipping bounds every term; a tenfold slowdown
// (log-shift 2.3, several standard deviations of typical task times) trips it within 4-8 tasks.
void AtaAutoPolicy::test_for_change(std::size_t worker) {
  const Worker& w = workers_[worker];
  const double* logs = &log_ring_[worker * kWindow];
  const double total = w.log_mean * static_cast<double>(w.count);
  const double total_squares = w.log_m2 + w.log_mean * total;
  const double pooled = pooled_log_variance();
  double suffix_sum = 0.0;
  double suffix_squares = 0.0;
  std::size_t taken = 0;
  for (const std::size_t m : kSuffixes) {
    if (2 * m > w.count) return;  // needs m recent times and at least m older ones
    for (; taken < m; ++taken) {
      const double l = logs[(w.count - 1 - taken) % kWindow];
      suffix_sum += l;
      suffix_squares += l * l;
    }
    // Suffix m is tested every m/2 observations: a change shows in the suffix for m tasks, so
    // this delays an alarm by at most m/2 - 1 tasks and makes a test every ~1.1 observations.
    if (w.count % (m / 2) != 0) continue;
    const double older = static_cast<double>(w.count - m);
    const double older_mean = (total - suffix_sum) / older;  // older >= m >= 4
    const double older_m2 =
        std::max(total_squares - suffix_squares - older_mean * (total - suffix_sum), 0.0);
    const double variance = (kShrinkDof * pooled + older_m2) / (kShrinkDof + older - 1.0);
    const double sd = std::sqrt(variance);
    if (!(sd > 0.0)) continue;
    const double cap = kClip * sd;
    double clipped = 0.0;
    for (std::size_t j = 0; j < m; ++j) {
      clipped += std::clamp(logs[(w.count - 1 - j) % kWindow] - older_mean, -cap, cap);
    }
    // |clipped| / standard error > z, squared: the standard error is sd sqrt(m (1 + m / older)).
    const double md = static_cast<double>(m);
    const double threshold2 = options_.change_threshold * options_.change_threshold;
    if (clipped * clipped > threshold2 * variance * md * (1.0 + md / older)) {
      restart(worker, m);
      return;
    }
  }
}

// Restarts the worker's statistics from its last `keep` times (the new regime).
void AtaAutoPolicy::restart(std::size_t worker, std::size_t keep) {
  Worker& w = workers_[worker];
  std::array<double, kWindow> times{};
  std::array<double, kWindow> logs{};
  for (std::size_t j = 0; j < keep; ++j) {
    const std::size_t at = worker * kWindow + (w.count - keep + j) % kWindow;
    times[j] = ring_[at];
    logs[j] = log_ring_[at];
  }
  pool_remove(worker);
  w = Worker{};
  for (std::size_t j = 0; j < keep; ++j) add(worker, times[j], logs[j]);
  pool_add(worker);
  race_rounds_[worker] = 0;
  race_exposure_[worker] = 0.0;
  race_finished_[worker] = 0;
  planned_[worker] = kStale;
  ++changes_detected_;
}

void AtaAutoPolicy::choose_plan(std::size_t batch, Plan& out) {
  racing_ = false;
  restarting_ = false;
  hedging_ = false;
  if (options_.race == RaceKind::fungible && unseen_ == workers() && backlog().empty()) {
    open_race(out);
    return;
  }
  if (options_.race && backlog().empty() && shape_->ratios().size() >= kEvaluationRatios &&
      unseen_ < workers()) {
    // A change, or a worker seen for the first time, brings the evaluation forward.
    if (changes_detected_ != changes_at_evaluation_ || unseen_ != unseen_at_evaluation_) {
      changes_at_evaluation_ = changes_detected_;
      unseen_at_evaluation_ = unseen_;
      full_evaluation_ = true;
      next_evaluation_ = std::min(next_evaluation_,
                                  evaluated_at_ + std::max<std::size_t>(1, evaluation_gap_ / kChangePull));
    }
    if (round() >= next_evaluation_) evaluate_plans(batch);
    if (racers_ > 0) {
      race(batch, out);
      racing_ = true;
      return;
    }
    hedging_ = hedged_;
  }
  Policy::choose_plan(batch, out);
  if (hedging_) {
    out.set_backups(detail::PlanEvaluator::kHedging);
    ++hedged_rounds_;
  }
  ++rounds_by_racers_[0];
}

// Step 5's evaluation: the known workers by planning mean (ties by index), the quotas of step 2
// over the fastest, and the evaluator's choice among them and the races.
void AtaAutoPolicy::evaluate_plans(std::size_t batch) {
  const std::size_t n = workers();
  if (full_evaluation_) {
    evaluator_->tabulate_renewals(shape_->ratios());
    std::fill(planned_.begin(), planned_.end(), kStale);
  }
  keyed_.clear();
  for (std::size_t i = 0; i < n; ++i) {
    if (workers_[i].count > 0) keyed_.emplace_back(planning_mean(i), i);
  }
  std::sort(keyed_.begin(), keyed_.end());
  order_.resize(keyed_.size());
  sorted_means_.resize(keyed_.size());
  for (std::size_t j = 0; j < keyed_.size(); ++j) {
    sorted_means_[j] = keyed_[j].first;
    order_[j] = keyed_[j].second;
  }
  // The quotas of step 2 over the fastest, with the estimated means (no posterior noise).
  const std::size_t k = std::min(batch, order_.size());
  const double pool = pooled_cv2();
  const double per_scale2 = 1.0 / (options_.exploration * options_.exploration);
  candidate_means_.assign(sorted_means_.begin(), sorted_means_.begin() + static_cast<std::ptrdiff_t>(k));
  candidate_estimates_ = candidate_means_;
  candidate_cv2_.resize(k);
  candidate_caps_.resize(k);
  for (std::size_t j = 0; j < k; ++j) {
    const std::size_t i = order_[j];
    if (stale_[i]) refresh(i);
    candidate_cv2_[j] = (pool_weight_[i] * pool + own_[i]) * static_cast<double>(workers_[i].count) * per_scale2;
    candidate_caps_[j] = kRamp * workers_[i].count;
  }
  if (shape_->ready()) {
    for (std::size_t r = 0; r < kEvaluationSolves; ++r) {
      evaluation_allocator_->solve_with_shape(candidate_means_, candidate_cv2_, candidate_caps_,
                                              candidate_estimates_, batch, candidate_tasks_, *shape_);
    }
  } else {
    evaluation_allocator_->solve(candidate_means_, candidate_cv2_, candidate_caps_, batch,
                                 candidate_tasks_, {});
  }
  sorted_quotas_.assign(order_.size(), 0);
  // What the drivers' backup rule will read for each of them (finished times only).
  rule_means_.clear();
  if (options_.hedge_quotas) {
    for (const std::size_t i : order_) rule_means_.push_back(stats(i).mean());
  }
  std::copy(candidate_tasks_.begin(), candidate_tasks_.begin() + static_cast<std::ptrdiff_t>(k),
            sorted_quotas_.begin());
  const PlanEstimate best = evaluator_->choose(
      sorted_means_, sorted_quotas_, shape_->ratios(), batch, options_.objective.price(n),
      *options_.race, full_evaluation_ ? 0 : racers_, options_.race_restarts, rule_means_);
  full_evaluation_ = false;
  // A debt of the quota rounds' exploration (a heavy-tailed probe's overshoot can be worth
  // thousands of race rounds' budget) is not carried into a race, whose probes cost work.
  if (racers_ == 0 && best.racers > 0) credit_ = std::max(credit_, 0.0);
  racers_ = best.racers;
  restart_ = best.restart_after;
  hedged_ = best.hedged;
  race_wall_ = best.wall;
  race_objective_ = best.objective;
  last_evaluation_.assign(evaluator_->all().begin(), evaluator_->all().end());
  ++evaluations_;
  evaluated_at_ = round();
  // At most the rounds so far: early choices rest on few observations, and the local steps
  // that revisit them cost little.
  evaluation_gap_ =
      std::max(kMinEvaluationGap, std::min(evaluator_->events() / (n + batch), round()));
  next_evaluation_ = round() + evaluation_gap_;
  changes_at_evaluation_ = changes_detected_;
  unseen_at_evaluation_ = unseen_;
}

// A race of the racers_ known workers of least planning mean, plus exploratory racers while the
// credit lasts (each charged p x the predicted wall: the work it adds), with the chosen restart
// budgets if any.
void AtaAutoPolicy::race(std::size_t batch, Plan& out) {
  const std::size_t n = workers();
  keyed_.clear();
  for (std::size_t i = 0; i < n; ++i) {
    if (workers_[i].count > 0) keyed_.emplace_back(planning_mean(i), i);
  }
  const std::size_t m = std::min(racers_, keyed_.size());
  std::nth_element(keyed_.begin(), keyed_.begin() + static_cast<std::ptrdiff_t>(m - 1), keyed_.end());
  order_.resize(m);
  for (std::size_t j = 0; j < m; ++j) order_[j] = keyed_[j].second;
  for (std::size_t j = 0; j < m; ++j) exploring_[order_[j]] = 1;  // not explored: they race
  explored_.clear();
  pick_explored(batch);
  for (std::size_t j = 0; j < m; ++j) {
    const std::size_t i = order_[j];
    out.set_racer(i);
    exploring_[i] = 0;
    last_allocated_[i] = round();
  }
  const double price = options_.objective.price(n);
  for (const std::size_t i : explored_) {
    out.set_racer(i);
    exploring_[i] = 0;
    credit_ -= price * race_wall_;
  }
  restarting_ = restart_ < std::numeric_limits<double>::infinity();
  for (const std::size_t i : out.racers()) {
    if (restarting_) {
      const double budget = restart_ * planning_mean(i);
      if (budget > 0.0) out.set_restart_after(i, budget);
    } else {
      ++race_rounds_[i];
      planned_[i] = kStale;
    }
    ++exposure_rounds_[i];
  }
  restart_rounds_ += restarting_;
  exploratory_tasks_ += explored_.size();
  credit_ = std::min(credit_ + options_.exploration_budget * race_objective_,
                     kCreditRounds * race_objective_);
  out.set_race_kind(*options_.race);
  ++rounds_by_racers_[m];
}

// The opening of a fungible race: nothing is known yet, and a racer can only shorten a round
// (its B-th result ends it), so racing many unseen workers finds fast ones in one round, where
// quotas over the few explored ones take rounds as slow as those. Up to 1/p racers (all of
// them at p <= 1/n), so that their work costs at most the round's wall.
void AtaAutoPolicy::open_race(Plan& out) {
  const std::size_t n = workers();
  const double price = options_.objective.price(n);
  const std::size_t m =
      price * static_cast<double>(n) <= 1.0
          ? n
          : std::max<std::size_t>(1, static_cast<std::size_t>(std::floor(1.0 / price)));
  for (std::size_t i = oldest_, k = 0; k < m; i = next_[i], ++k) out.set_racer(i);
  out.set_race_kind(RaceKind::fungible);
  racing_ = true;
  exploratory_tasks_ += m;
  ++rounds_by_racers_[m];
}

void AtaAutoPolicy::choose(std::size_t batch, Allocation& out) {
  credit_ -= round_overshoot_;
  round_overshoot_ = 0.0;
  const std::size_t n = workers();
  explored_.clear();
  if (unseen_ == n) {  // nothing known yet: the first workers share the batch
    for (std::size_t i = oldest_; i != n && explored_.size() < explored_per_round(batch);
         i = next_[i]) {
      explored_.push_back(i);
      probe_level_[i] = std::numeric_limits<double>::infinity();  // nothing to charge against
    }
    spread_.spread(explored_, batch, out);
    exploratory_tasks_ += batch;
    return;
  }
  pick_explored(batch);
  std::size_t tasks = batch - explored_.size();
  double predicted = plan_quotas(tasks);
  const std::size_t more = more_unseen(batch, tasks, predicted);
  if (more > 0) {
    for (std::size_t i = oldest_, added = 0; added < more; i = next_[i]) {
      if (exploring_[i]) continue;  // unseen workers come first in the list
      explored_.push_back(i);
      exploring_[i] = 1;
      ++added;
    }
    tasks -= more;
    predicted = replan(tasks);
  }
  commit(tasks, out);
  credit_ = std::min(credit_ + options_.exploration_budget * predicted, kCreditRounds * predicted);
  for (const std::size_t i : explored_) {
    out.add(i);
    probe_level_[i] = predicted;
    exploring_[i] = 0;
  }
  exploratory_tasks_ += explored_.size();
}

void AtaAutoPolicy::pick_explored(std::size_t batch) {
  const std::size_t none = workers();
  const std::size_t limit = std::min(explored_per_round(batch), batch - 1);
  // Follow-ups of probes that looked faster come first, whatever the credit (they are charged).
  std::size_t waiting = 0;
  for (const std::size_t i : follow_ups_) {
    if (probe_count_[i] == 0 || exploring_[i]) continue;  // sequence over, or listed twice
    if (explored_.size() < limit) {
      explored_.push_back(i);
      exploring_[i] = 1;
    } else {
      follow_ups_[waiting++] = i;
    }
  }
  follow_ups_.resize(waiting);
  if (!(credit_ > 0.0)) return;
  // Then the least recently observed: unseen workers (never observed, so first in the list),
  // then idle ones. A worker observed in the last round is in use, and so is every later one.
  // So is one given tasks in the last round whose times are not in yet: when batches overlap
  // (the runtime's load-aware rounds), rounds are allocated before earlier ones are observed.
  // And so is one with a backlog, tasks of earlier batches still queued or running: they will
  // report on it, and a task queued behind them would end late, holding its batch back (under
  // load, the least recently observed workers are the slow ones, and exploring them anyway
  // kept a queue on them that set the p99 latency: docs/service.md). Without a backlog (one
  // batch at a time) this changes nothing.
  const std::size_t now = round();
  const auto queued = backlog();
  for (std::size_t i = oldest_; i != none && explored_.size() < limit; i = next_[i]) {
    if (workers_[i].count > 0 && last_round_[i] + 1 >= now) break;
    if (exploring_[i] || (workers_[i].count > 0 && last_allocated_[i] + 1 >= now)) continue;
    if (!queued.empty() && queued[i] > 0.0) continue;
    explored_.push_back(i);
    exploring_[i] = 1;
  }
}

// Plans `tasks` tasks for the observed workers not explored this round: posterior draws, then
// the allocation of least estimated expected round time among the smallest draws. Returns that
// estimate (0 when no worker is available: commit() then spreads the tasks over the explored).
double AtaAutoPolicy::plan_quotas(std::size_t tasks) {
  heap_.clear();
  const std::size_t n = workers();
  std::size_t available = n - unseen_;
  for (const std::size_t i : explored_) available -= workers_[i].count > 0;
  if (tasks == 0 || available == 0) return 0.0;
  // Posterior draws in log space; only the m = min(tasks, available) smallest can get a task,
  // so they are kept in a bounded max-heap of (draw, index), and only they are exponentiated.
  const std::size_t m = std::min(tasks, available);
  const double pool = pooled_cv2();
  const auto queued = backlog();
  const double far2 = kFar * kFar;
  const double tail = far_tail();
  std::uint64_t state = random_state_;  // a local copy: the loop's stores cannot alias it
  double worst = std::numeric_limits<double>::infinity();  // the m-th smallest draw so far
  for (std::size_t i = 0; i < n; ++i) {
    if (stale_[i]) refresh(i);
    const double centre = centre_[i];
    if (centre == kUnseen || exploring_[i]) continue;
    const double variance = pool_weight_[i] * pool + own_[i];
    const double gap = centre - worst;
    double z = 0.0;
    if (gap > 0.0 && gap * gap > far2 * variance) {
      // More than kFar standard deviations above the m-th smallest draw so far: it can only
      // enter when z < -kFar. Decide that with one uniform, and draw z from the normal's tail
      // below -kFar when it happens. Exact, and it spares most workers the full draw.
      if (detail::uniform_open(state) >= tail) continue;
      z = -detail::normal_tail(state, kFar);
    } else {
      z = detail::standard_normal(state);
    }
    // Load-aware rounds rank a worker by the time its next task would end, behind its backlog.
    const double draw =
        centre + std::sqrt(variance) * z + (queued.empty() ? 0.0 : std::log1p(queued[i]));
    if (heap_.size() < m) {
      heap_.emplace_back(draw, i);
      std::push_heap(heap_.begin(), heap_.end());
      if (heap_.size() == m) worst = heap_.front().first;
    } else if (draw < worst) {
      std::pop_heap(heap_.begin(), heap_.end());
      heap_.back() = {draw, i};
      std::push_heap(heap_.begin(), heap_.end());
      worst = heap_.front().first;
    }
  }
  random_state_ = state;
  // Candidates in index order, so that ties break by the lowest worker index. A candidate's cv^2
  // is its posterior variance times K_i / c^2 (see refresh()).
  std::sort(heap_.begin(), heap_.end(),
            [](const auto& a, const auto& b) { return a.second < b.second; });
  const double per_scale2 = 1.0 / (options_.exploration * options_.exploration);
  candidate_means_.resize(heap_.size());
  candidate_cv2_.resize(heap_.size());
  candidate_caps_.resize(heap_.size());
  candidate_estimates_.resize(heap_.size());
  candidate_backlog_.resize(queued.empty() ? 0 : heap_.size());
  for (std::size_t j = 0; j < heap_.size(); ++j) {
    const std::size_t i = heap_[j].second;
    const auto count = static_cast<double>(workers_[i].count);
    if (queued.empty()) {
      candidate_means_[j] = std::exp(heap_[j].first);
    } else {
      candidate_means_[j] = std::exp(heap_[j].first - std::log1p(queued[i]));
      candidate_backlog_[j] = queued[i];
    }
    candidate_cv2_[j] = (pool_weight_[i] * pool + own_[i]) * count * per_scale2;
    candidate_caps_[j] = kRamp * workers_[i].count;
    candidate_estimates_[j] = std::exp(centre_[i]);
  }
  return replan(tasks);
}

// With a learned shape (and no backlog: load-aware rounds keep the quantile rule), the number of
// workers used is chosen by the shape's expected round time (RoundTimeAllocator).
double AtaAutoPolicy::replan(std::size_t tasks) {
  if (heap_.empty()) return 0.0;
  if (candidate_backlog_.empty() && shape_->ready()) {
    return allocator_->solve_with_shape(candidate_means_, candidate_cv2_, candidate_caps_,
                                        candidate_estimates_, tasks, candidate_tasks_, *shape_);
  }
  return allocator_->solve(candidate_means_, candidate_cv2_, candidate_caps_, tasks,
                           candidate_tasks_, candidate_backlog_);
}

void AtaAutoPolicy::commit(std::size_t tasks, Allocation& out) {
  if (heap_.empty()) {
    if (tasks > 0) spread_.spread(explored_, tasks, out);
    return;
  }
  for (std::size_t j = 0; j < heap_.size(); ++j) {
    if (candidate_tasks_[j] > 0) {
      out.add(heap_[j].second, candidate_tasks_[j]);
      last_allocated_[heap_[j].second] = round();
    }
  }
}

// How many more unseen workers to try this round, beyond the budget's, for two reasons:
// - worth it (one worker at most): the chance that an unseen worker is useful (the share of the
//   kRecent workers seen last whose mean is below the slowest mean the plan uses) times what a
//   useful one gains per round (the predicted round time over the workers sharing it) times
//   the rounds so far (the horizon ahead, as far as one can tell) exceeds what it costs (the
//   mean time beyond the predicted round time of the kRecent first times). Recent, not all,
//   seen workers, so that once the fast ones of a cluster are found (whatever their order),
//   slow ones do not keep exploration going.
// - free (any number): the expected maximum of the round's unseen times (their quantile of
//   probability 0.5704^(1/u), u unseen workers, among the kRecent first times) stays below the
//   round time predicted for the other tasks, which shrinks, at worst in proportion, as tasks
//   leave them. When the known workers are few or slow, trying many unseen ones at once costs
//   nothing.
std::size_t AtaAutoPolicy::more_unseen(std::size_t batch, std::size_t tasks, double predicted) {
  if (unseen_ == 0 || heap_.empty() || tasks < 2 || recent_.empty()) return 0;
  std::size_t unseen_now = 0;
  for (const std::size_t i : explored_) unseen_now += workers_[i].count == 0;
  const std::size_t room = std::min(tasks - 1, unseen_ - unseen_now);
  std::size_t used = 0;
  double slowest = 0.0;
  for (std::size_t j = 0; j < heap_.size(); ++j) {
    if (candidate_tasks_[j] == 0) continue;
    ++used;
    slowest = std::max(slowest, corrected_mean(workers_[heap_[j].second]));
  }
  std::size_t useful = 0;
  double cost = 0.0;
  recent_times_.clear();
  for (const auto& [worker, seconds] : recent_) {
    useful += corrected_mean(workers_[worker]) < slowest;
    cost += std::max(seconds - predicted, 0.0);
    recent_times_.push_back(seconds);
  }
  const auto recent = static_cast<double>(recent_.size());
  const double value = static_cast<double>(useful) / recent * predicted /
                       static_cast<double>(used) * static_cast<double>(round());
  const std::size_t limit = std::min(explored_per_round(batch), batch - 1);
  const std::size_t worth = value > cost / recent && explored_.size() < limit ? 1 : 0;

  std::sort(recent_times_.begin(), recent_times_.end());
  const auto fits = [&](std::size_t extra) {
    const std::size_t u = unseen_now + extra;
    if (u == 0) return true;
    const double p = std::pow(kGumbelMeanLevel, 1.0 / static_cast<double>(u));
    const std::size_t at = std::min(recent_times_.size() - 1, static_cast<std::size_t>(p * recent));
    const double left = static_cast<double>(tasks - extra) / static_cast<double>(tasks);
    return recent_times_[at] <= predicted * left;
  };
  std::size_t low = 0;
  std::size_t high = room;
  while (low < high) {
    const std::size_t mid = (low + high + 1) / 2;
    if (fits(mid)) {
      low = mid;
    } else {
      high = mid - 1;
    }
  }
  return std::min(std::max(worth, low), room);
}

// Remembers the first time of each newly seen worker; the last kRecent are kept.
void AtaAutoPolicy::remember_first_time(std::size_t worker, double seconds) {
  if (recent_.size() < kRecent) {
    recent_.emplace_back(worker, seconds);
  } else {
    recent_[recent_next_] = {worker, seconds};
  }
  recent_next_ = (recent_next_ + 1) % kRecent;
}

}  // namespace ata

#include "core/plan_evaluator.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <utility>

#include "ata/core/error.hpp"
#include "core/checks.hpp"
#include "core/normal_sampler.hpp"

namespace ata::detail {

namespace {
// choose()'s inputs: a simulated round that cannot end, or a NaN objective, would otherwise come
// out as a plan.
void require_plans(std::span<const double> means, std::span<const std::size_t> quotas,
                   std::span<const double> ratios, std::size_t batch, double price,
                   std::span<const double> rule_means) {
  if (means.empty()) throw InvalidArgument("plan evaluation needs at least one worker's mean");
  for (std::size_t j = 0; j < means.size(); ++j) {
    require_non_negative(means[j], "a worker's planning mean");
    if (j > 0 && means[j] < means[j - 1]) {
      throw InvalidArgument("plan evaluation needs the means ascending, got " +
                            to_text(means[j - 1]) + " before " + to_text(means[j]));
    }
  }
  if (quotas.size() != means.size()) {
    throw InvalidArgument("plan evaluation got " + std::to_string(quotas.size()) + " quotas for " +
                          std::to_string(means.size()) + " workers");
  }
  std::size_t tasks = 0;
  for (const std::size_t q : quotas) tasks += q;
  if (batch == 0 || tasks != batch) {
    throw InvalidArgument("plan evaluation needs quotas summing to the batch B >= 1, got " +
                          std::to_string(tasks) + " for B = " + std::to_string(batch));
  }
  double total = 0.0;
  for (const double r : ratios) {
    require_non_negative(r, "a ratio of the shape");
    total += r;
  }
  if (!(total > 0.0)) throw InvalidArgument("plan evaluation needs ratios with a positive mean");
  require_non_negative(price, "work price");
  if (!rule_means.empty() && rule_means.size() != means.size()) {
    throw InvalidArgument("plan evaluation got " + std::to_string(rule_means.size()) +
                          " backup rule means for " + std::to_string(means.size()) + " workers");
  }
  for (const double m : rule_means) require_non_negative(m, "a backup rule's mean");
}

// Odd constants that spread (evaluation, round, worker, task) over the generator's state.
constexpr std::uint64_t kPerEvaluation = 0x9e3779b97f4a7c15ULL;
constexpr std::uint64_t kPerRound = 0xbf58476d1ce4e5b9ULL;
constexpr std::uint64_t kPerWorker = 0x94d049bb133111ebULL;
constexpr std::uint64_t kPerTask = 0xd6e8feb86659fd93ULL;
// The renewal grid: x_g = 2^(g / kPerOctave - kLowOctaves).
constexpr double kPerOctave = 8.0;
constexpr double kLowOctaves = 6.0;
}  // namespace

PlanEvaluator::PlanEvaluator(std::uint64_t seed) : seed_(seed), grid_(kGrid) {
  for (std::size_t g = 0; g < kGrid; ++g) {
    grid_[g] = std::exp2(static_cast<double>(g) / kPerOctave - kLowOctaves);
  }
}

void PlanEvaluator::tabulate_renewals(std::span<const double> ratios) {
  double total = 0.0;
  double squares = 0.0;
  for (const double r : ratios) {
    total += r;
    squares += r * r;
  }
  const auto count = static_cast<double>(ratios.size());
  const double scale = count / total;  // to mean 1
  shape_cv2_ = std::max(squares * scale * scale / count - 1.0, 0.0);
  const double top = grid_.back();
  std::vector<double> finished(kGrid + 1, 0.0);  // renewals first counted at each grid point
  std::uint64_t state = seed_ ^ kPerEvaluation;
  for (std::size_t path = 0; path < kPaths; ++path) {
    double at = 0.0;
    for (;;) {
      at += ratios[(splitmix64(state) >> 11) % ratios.size()] * scale;
      if (at > top) break;
      // The first grid point at or after `at`.
      const double g = std::ceil((std::log2(at) + kLowOctaves) * kPerOctave);
      finished[static_cast<std::size_t>(std::clamp(g, 0.0, static_cast<double>(kGrid - 1)))] += 1.0;
    }
  }
  renewals_.assign(kGrid, 0.0);
  double running = 0.0;
  for (std::size_t g = 0; g < kGrid; ++g) {
    running += finished[g];
    renewals_[g] = running / static_cast<double>(kPaths);
  }
}

double PlanEvaluator::renewals(double windows) const noexcept {
  const double top = grid_.back();
  if (windows >= top) return windows - top + renewals_.back();
  const double position = (std::log2(std::max(windows, 1e-300)) + kLowOctaves) * kPerOctave;
  if (position <= 0.0) return renewals_.front() * windows / grid_.front();
  const auto g = static_cast<std::size_t>(position);
  const double x0 = grid_[g];
  const double x1 = grid_[g + 1];
  return renewals_[g] + (renewals_[g + 1] - renewals_[g]) * (windows - x0) / (x1 - x0);
}

double PlanEvaluator::windows_for(double count) const noexcept {
  const double top = grid_.back();
  if (count >= renewals_.back()) return top + count - renewals_.back();
  if (count <= renewals_.front()) {
    return renewals_.front() > 0.0 ? grid_.front() * count / renewals_.front() : grid_.front();
  }
  const auto above = static_cast<std::size_t>(
      std::upper_bound(renewals_.begin(), renewals_.end(), count) - renewals_.begin());
  const std::size_t g = above - 1;  // renewals_[g] <= count < renewals_[above]
  const double x0 = grid_[g];
  const double x1 = grid_[above];
  return x0 + (x1 - x0) * (count - renewals_[g]) / (renewals_[above] - renewals_[g]);
}

double PlanEvaluator::ratio(std::size_t round, std::size_t worker, std::size_t task) const noexcept {
  std::uint64_t state = seed_ + evaluation_ * kPerEvaluation + round * kPerRound +
                        worker * kPerWorker + task * kPerTask;
  // The top 32 bits scaled to [0, size) by a multiplication (Lemire's reduction): no division.
  const std::uint64_t bits = splitmix64(state) >> 32;
  return ratios_[(bits * ratios_.size()) >> 32] * ratio_scale_;
}

void PlanEvaluator::quotas(std::span<const double> means, std::span<const std::size_t> tasks,
                           double price, std::span<const double> rule_means) {
  const bool hedged = !rule_means.empty();
  double wall = 0.0;
  double work = 0.0;
  double hedged_wall = 0.0;
  double hedged_work = 0.0;
  for (std::size_t r = 0; r < rounds_; ++r) {
    double longest = 0.0;
    double round_work = 0.0;
    bool overdue = false;  // a copy of the round runs long enough for a backup
    for (std::size_t j = 0; j < means.size(); ++j) {
      double sum = 0.0;
      for (std::size_t t = 0; t < tasks[j]; ++t) {
        const double x = ratio(r, j, t);
        sum += x;
        overdue = overdue || (hedged && x >= overdue_ratio_[j]);
      }
      sum *= means[j];
      longest = std::max(longest, sum);
      round_work += sum;
      events_ += tasks[j];
    }
    wall += longest;
    work += round_work;
    if (!hedged) continue;
    if (overdue) {
      const auto [w, b] = hedged_round(r, means, tasks, rule_means);
      hedged_wall += w;
      hedged_work += b;
    } else {
      hedged_wall += longest;
      hedged_work += round_work;
    }
  }
  const auto rounds = static_cast<double>(rounds_);
  estimates_.push_back({0, wall / rounds, work / rounds, (wall + price * work) / rounds});
  if (hedged) {
    estimates_.push_back({0, hedged_wall / rounds, hedged_work / rounds,
                          (hedged_wall + price * hedged_work) / rounds, kNoRestart, true});
  }
}

// The simulator's event loop (sim::Simulation's event_round) for quotas with backup copies:
// between finishes the rule is asked whenever a worker is free, and the clock also stops when a
// running copy becomes overdue. Ties between finishes go to the lower worker, as there.
std::pair<double, double> PlanEvaluator::hedged_round(std::size_t round,
                                                      std::span<const double> means,
                                                      std::span<const std::size_t> tasks,
                                                      std::span<const double> rule_means) {
  constexpr double kNever = std::numeric_limits<double>::infinity();
  hedged_worker_.clear();
  first_task_.clear();
  std::size_t batch = 0;
  for (std::size_t j = 0; j < means.size(); ++j) {
    if (tasks[j] == 0) continue;  // never available, never running: the rule ignores it
    hedged_worker_.push_back(j);
    first_task_.push_back(batch);
    batch += tasks[j];
  }
  const std::size_t q = hedged_worker_.size();
  view_.assign(q, BackupWorker{});
  own_started_.assign(q, 0);
  copies_started_.assign(q, 0);
  running_task_.assign(q, 0);
  copy_start_.assign(q, 0.0);
  copy_end_.assign(q, kNever);  // +infinity: not running
  copy_long_.assign(q, 0);
  task_copies_.assign(batch, 0);
  double now = 0.0;
  double work = 0.0;
  // The rule acts only through a free (available) worker, and only on a copy long enough to
  // become overdue: a shorter one ends before its due time. Without both it answers none and
  // wakes no one before the next finish, so it is not asked.
  std::size_t free = 0;
  std::size_t long_running = 0;
  const auto start = [&](std::size_t u, std::size_t task) {
    const std::size_t j = hedged_worker_[u];
    const double x = ratio(round, j, copies_started_[u]++);
    running_task_[u] = task;
    copy_start_[u] = now;
    copy_end_[u] = now + means[j] * x;
    copy_long_[u] = x >= overdue_ratio_[j] ? 1 : 0;
    long_running += copy_long_[u];
    ++task_copies_[task];
  };
  const auto end_copy = [&](std::size_t u) {
    work += now - copy_start_[u];
    --task_copies_[running_task_[u]];
    long_running -= copy_long_[u];
    copy_end_[u] = kNever;
  };
  const auto continue_on = [&](std::size_t u) {
    const std::size_t j = hedged_worker_[u];
    if (own_started_[u] < tasks[j]) {
      start(u, first_task_[u] + own_started_[u]++);
    } else {
      ++free;
    }
  };
  for (std::size_t u = 0; u < q; ++u) continue_on(u);
  const auto describe = [&] {
    for (std::size_t u = 0; u < q; ++u) {
      BackupWorker& v = view_[u];
      const std::size_t j = hedged_worker_[u];
      v.mean = rule_means[j];
      v.unstarted = tasks[j] - own_started_[u];
      v.running = copy_end_[u] != kNever;
      v.elapsed = v.running ? now - copy_start_[u] : 0.0;
      v.copies = v.running ? task_copies_[running_task_[u]] : 0;
      v.available = !v.running && v.unstarted == 0;
    }
    events_ += q;
  };
  std::size_t remaining = batch;
  while (remaining > 0) {
    double wake = kNever;
    if (free > 0 && long_running > 0) {
      describe();
      for (BackupAction a = hedging_.next(view_); a.kind != BackupAction::Kind::none;
           a = hedging_.next(view_)) {
        --free;
        start(a.worker, running_task_[a.from]);  // copies mode: backups only, no take-overs
        events_ += q;
        describe();
      }
      wake = now + hedging_.time_to_next_overdue(view_);
      events_ += 2 * q;
    }
    std::size_t next = 0;
    for (std::size_t u = 1; u < q; ++u) {
      if (copy_end_[u] < copy_end_[next]) next = u;
    }
    events_ += q;
    if (wake < copy_end_[next]) {
      // The rule answers from elapsed times computed as now - start: step past rounding.
      now = std::max(wake, std::nextafter(now, kNever));
      continue;
    }
    now = copy_end_[next];
    const std::size_t task = running_task_[next];
    end_copy(next);
    --remaining;
    // The first copy to finish wins: the others stop, and their workers go on.
    for (std::size_t u = 0; u < q && task_copies_[task] > 0; ++u) {
      if (copy_end_[u] == kNever || running_task_[u] != task) continue;
      end_copy(u);
      continue_on(u);
    }
    continue_on(next);
  }
  return {now, work};
}

PlanEstimate PlanEvaluator::race(std::span<const double> means, std::size_t racers,
                                 std::size_t batch, double price, RaceKind kind, double restart) {
  const auto later = std::greater<>{};
  double wall = 0.0;
  double work = 0.0;
  started_.assign(racers, 0);
  restarted_in_row_.assign(racers, 0);
  for (std::size_t r = 0; r < rounds_; ++r) {
    heap_.clear();
    std::fill(started_.begin(), started_.end(), 0);
    std::fill(restarted_in_row_.begin(), restarted_in_row_.end(), 0);
    double busy = 0.0;  // indexed races: the copies' times
    // Racer j's next copy from `at`: its end, or its restart budget's (the event's low bit).
    // The budget backs off as every driver's does: a budget that no observed time fits would
    // otherwise restart forever.
    const auto start = [&](double at, std::size_t j) {
      const double d = means[j] * ratio(r, j, started_[j]++);
      const double budget = backed_off_budget(restart * means[j], restarted_in_row_[j]);
      const bool restarted = d > budget;
      restarted_in_row_[j] = restarted ? restarted_in_row_[j] + 1 : 0;
      busy += restarted ? budget : d;
      heap_.emplace_back(at + (restarted ? budget : d), 2 * j + (restarted ? 1 : 0));
    };
    std::size_t claimed = 0;
    for (std::size_t j = 0; j < racers && (kind == RaceKind::fungible || claimed < batch); ++j) {
      start(0.0, j);
      ++claimed;
    }
    std::make_heap(heap_.begin(), heap_.end(), later);
    std::size_t results = 0;
    std::size_t events = 0;
    double end = 0.0;
    while (!heap_.empty()) {
      std::pop_heap(heap_.begin(), heap_.end(), later);
      const auto [at, code] = heap_.back();
      heap_.pop_back();
      ++events;
      end = at;
      const std::size_t j = code / 2;
      if (code % 2 == 0) {  // a result; a restart starts the same task afresh
        if (++results == batch && kind == RaceKind::fungible) break;
        if (kind == RaceKind::indexed && claimed == batch) continue;
        ++claimed;
      }
      start(at, j);
      std::push_heap(heap_.begin(), heap_.end(), later);
    }
    // The round's cost: its starts (make_heap is linear) and a heap operation per event.
    events_ += racers + events * static_cast<std::size_t>(std::bit_width(racers));
    wall += end;
    work += kind == RaceKind::fungible ? static_cast<double>(racers) * end : busy;
  }
  const auto rounds = static_cast<double>(rounds_);
  return {racers, wall / rounds, work / rounds, (wall + price * work) / rounds, restart};
}

PlanEstimate PlanEvaluator::choose(std::span<const double> means,
                                   std::span<const std::size_t> quotas_per_worker,
                                   std::span<const double> ratios, std::size_t batch, double price,
                                   RaceKind kind, std::size_t around, bool restarts,
                                   std::span<const double> rule_means) {
  require_plans(means, quotas_per_worker, ratios, batch, price, rule_means);
  ++evaluation_;
  events_ = 0;
  ratios_ = ratios;
  double total = 0.0;
  double largest = 0.0;
  for (const double r : ratios) {
    total += r;
    largest = std::max(largest, r);
  }
  ratio_scale_ = static_cast<double>(ratios.size()) / total;
  // A round's wall is its B-th result, whose relative spread shrinks as 1 / sqrt(B): as many
  // rounds as keep rounds x B about constant.
  rounds_ = std::clamp(kTasks / batch, kMinRounds, kMaxRounds);
  estimates_.clear();
  // A copy becomes overdue only once it has run the threshold times the mean its rule reads
  // (the largest known for an unknown one): with no ratio that long, the hedged quotas are the
  // quotas, draw for draw.
  bool hedged = false;
  if (!rule_means.empty()) {
    double fallback = 0.0;  // the rule's, over the workers it sees: those with quotas
    for (std::size_t j = 0; j < means.size(); ++j) {
      if (quotas_per_worker[j] > 0) fallback = std::max(fallback, rule_means[j]);
    }
    overdue_ratio_.resize(means.size());
    for (std::size_t j = 0; j < means.size(); ++j) {
      const double due = rule_means[j] > 0.0 ? rule_means[j] : fallback;
      overdue_ratio_[j] = means[j] > 0.0 && due > 0.0
                              ? hedging_.options().threshold_multiple * due / means[j]
                              : std::numeric_limits<double>::infinity();
      hedged = hedged || (quotas_per_worker[j] > 0 && largest * ratio_scale_ >= overdue_ratio_[j]);
    }
  }
  quotas(means, quotas_per_worker, price, hedged ? rule_means : std::span<const double>{});
  const std::size_t n = means.size();
  const auto tried = [&](std::size_t m) {
    return std::any_of(estimates_.begin(), estimates_.end(), [m](const PlanEstimate& e) {
      return e.racers == m && e.restart_after == kNoRestart;
    });
  };
  const auto try_race = [&](std::size_t m) {
    if (!tried(m)) estimates_.push_back(race(means, m, batch, price, kind, kNoRestart));
  };
  if (around > 0) {  // a local step: the race played and its neighbours
    const std::size_t m = std::min(around, n);
    const std::size_t step = std::max<std::size_t>(1, m / 8);
    try_race(m);
    try_race(std::max<std::size_t>(1, m - std::min(step, m - 1)));
    try_race(std::min(n, m + step));
  } else {
    for (std::size_t m = 1; m < n; m *= 2) try_race(m);
    try_race(n);
    std::size_t grid_best = 0;
    double value = 0.0;
    for (const PlanEstimate& e : estimates_) {
      if (e.racers > 0 && (grid_best == 0 || e.objective < value)) {
        grid_best = e.racers;
        value = e.objective;
      }
    }
    const std::size_t step = std::max<std::size_t>(1, grid_best / 8);
    for (std::size_t m = std::max<std::size_t>(1, grid_best / 2); m <= std::min(n, 2 * grid_best);
         m += step) {
      try_race(m);
    }
  }
  // Restarts pay only where the hazard falls: tails clearly heavier than the exponential's (which
  // restarts leave as it is, and lighter tails lose by them). Then the best race is tried with
  // budgets.
  if (restarts && shape_cv2_ > kRestartCv2) {
    const PlanEstimate* best_race = nullptr;
    for (const PlanEstimate& e : estimates_) {
      if (e.racers > 0 && (best_race == nullptr || e.objective < best_race->objective)) best_race = &e;
    }
    if (best_race != nullptr) {
      const std::size_t m = best_race->racers;
      for (const double budget : kRestartBudgets) {
        estimates_.push_back(race(means, m, batch, price, kind, budget));
      }
    }
  }
  // The quotas come first: a strict comparison leaves ties to them, then to the hedged quotas
  // (the same rounds while no copy starts), then to the race tried first.
  const PlanEstimate* best = &estimates_.front();
  for (const PlanEstimate& e : estimates_) {
    if (e.objective < best->objective) best = &e;
  }
  return *best;
}

}  // namespace ata::detail

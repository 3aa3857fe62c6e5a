#include "ata/core/backup_rule.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "ata/core/error.hpp"
#include "core/checks.hpp"

namespace ata {

BackupMode parse_backup_mode(std::string_view name) {
  if (name == "off") return BackupMode::off;
  if (name == "copies") return BackupMode::copies;
  if (name == "on") return BackupMode::on;
  throw InvalidArgument("backups must be off, copies or on, got '" + std::string(name) + "'");
}

std::string_view backup_mode_name(BackupMode mode) noexcept {
  switch (mode) {
    case BackupMode::off:
      return "off";
    case BackupMode::copies:
      return "copies";
    case BackupMode::on:
      return "on";
  }
  return "off";  // not reached: every enumerator is named above
}

namespace {
constexpr double kInfinity = std::numeric_limits<double>::infinity();
constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();

double mean_or(const BackupWorker& w, double fallback) noexcept {
  return w.mean > 0.0 ? w.mean : fallback;
}
}  // namespace

BackupRule::BackupRule(const BackupOptions& options) : options_(options) {
  if (!(options.threshold_multiple > 1.0)) {
    throw InvalidArgument("backup threshold_multiple must be > 1 (+inf: no backup copies), got " +
                          detail::to_text(options.threshold_multiple));
  }
  if (options.min_overdue && !(*options.min_overdue >= 0.0)) {
    throw InvalidArgument("backup min_overdue must be >= 0, got " +
                          detail::to_text(*options.min_overdue));
  }
  if (options.max_copies < 1) {
    throw InvalidArgument("backup max_copies must be >= 1 (1: no backup copies), got 0");
  }
}

double BackupRule::known_fallback(std::span<const BackupWorker> workers) const noexcept {
  double largest = 0.0;
  for (const auto& w : workers) largest = std::max(largest, w.mean);
  return largest;  // 0: nothing known
}

BackupRule::Helper BackupRule::fastest_available(std::span<const BackupWorker> workers,
                                                 double fallback) const noexcept {
  Helper best{kNone, kInfinity};
  for (std::size_t i = 0; i < workers.size(); ++i) {
    if (!workers[i].available) continue;
    const double m = mean_or(workers[i], fallback);
    if (best.worker == kNone || m < best.mean) best = {i, m};
  }
  return best;
}

double BackupRule::due(const BackupWorker& worker, double fallback,
                       double helper_mean) const noexcept {
  if (!worker.running || worker.copies >= options_.max_copies) return kInfinity;
  const double m = mean_or(worker, fallback);
  if (!(m > 0.0)) return kInfinity;
  return std::max(
      {options_.threshold_multiple * m, helper_mean, options_.min_overdue.value_or(0.0)});
}

BackupAction BackupRule::next(std::span<const BackupWorker> workers) const {
  if (!options_.enabled()) return {};
  const double fallback = known_fallback(workers);
  const Helper helper = fastest_available(workers, fallback);
  if (helper.worker == kNone) return {};
  // 1. Take over the unstarted task expected to finish last.
  std::size_t victim = kNone;
  double latest = 0.0;
  for (std::size_t i = 0; i < workers.size() && options_.take_overs(); ++i) {
    const BackupWorker& w = workers[i];
    const double m = mean_or(w, fallback);
    if (w.unstarted == 0 || (m < helper.mean && !w.stalled)) continue;  // a slower helper costs
    const double remaining = w.running ? std::max(m - w.elapsed, 0.0) : 0.0;
    const double finish = w.stalled ? kInfinity : remaining + static_cast<double>(w.unstarted) * m;
    if (victim == kNone || finish > latest) {
      victim = i;
      latest = finish;
    }
  }
  if (victim != kNone && helper.mean < latest) {
    return {BackupAction::Kind::take_over, helper.worker, victim};
  }
  // 2. A backup copy of the most overdue running copy.
  std::size_t overdue = kNone;
  double most = 0.0;
  for (std::size_t i = 0; i < workers.size(); ++i) {
    const double d = due(workers[i], fallback, helper.mean);
    if (d == kInfinity || workers[i].elapsed < d) continue;
    const double ratio = workers[i].elapsed / d;
    if (overdue == kNone || ratio > most) {
      overdue = i;
      most = ratio;
    }
  }
  if (overdue != kNone) return {BackupAction::Kind::backup, helper.worker, overdue};
  return {};
}

double BackupRule::time_to_next_overdue(std::span<const BackupWorker> workers) const {
  if (!options_.enabled()) return kInfinity;
  const double fallback = known_fallback(workers);
  const Helper helper = fastest_available(workers, fallback);
  if (helper.worker == kNone) return kInfinity;
  double soonest = kInfinity;
  for (const auto& w : workers) {
    soonest = std::min(soonest, std::max(due(w, fallback, helper.mean) - w.elapsed, 0.0));
  }
  return soonest;
}

}  // namespace ata

#pragma once
/// @file
/// Backup tasks for the allocated mode: which idle worker takes over which unstarted task, and
/// when a running task earns a backup copy. One pure rule, shared by every driver (the
/// simulator in virtual time; a thread runtime on the clock).

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string_view>

namespace ata {

/// What the backup rule does, by the names the apps' --backups, the service's configuration
/// and the docs use.
enum class BackupMode : std::uint8_t {
  off,     ///< "off": every task runs where it was planned, and the batch waits for it
  copies,  ///< "copies": a free worker starts backup copies of overdue tasks
  on,      ///< "on": as copies, and it first takes over tasks other shares have not started
};

/// The mode named "off", "copies" or "on"; ata::InvalidArgument naming `name` otherwise.
[[nodiscard]] BackupMode parse_backup_mode(std::string_view name);
/// "off", "copies" or "on".
[[nodiscard]] std::string_view backup_mode_name(BackupMode mode) noexcept;

/// Settings of the backup rule: its mode and the parameters of its copies (used unless the
/// mode is off).
struct BackupOptions {
  BackupMode mode = BackupMode::off;
  /// A running copy is overdue once it has run threshold_multiple x its worker's learned mean
  /// (> 1; +infinity: take-overs only, never a backup copy). 4 means a probability of
  /// e^-4 = 1.8 % for exponential times and e^-7 = 0.09 % for the paper's shifted ones.
  double threshold_multiple = 4.0;
  /// Copies of one task that may run at once, the original included (>= 1; 1: take-overs only).
  std::size_t max_copies = 2;
  /// No backup copy of a copy that has run less than this (>= 0, in the driver's time unit).
  /// Unset: the driver's default, 0 in virtual time and 1 ms on threads
  /// (runtime::SchedulerOptions::kDefaultMinOverdue), above the runtime's own latency, so that
  /// tasks of microseconds, whose jitter passes any multiple of their mean, are not copied for
  /// nothing.
  std::optional<double> min_overdue;

  /// Whether the rule does anything (mode copies or on).
  [[nodiscard]] bool enabled() const noexcept { return mode != BackupMode::off; }
  /// Whether a free worker takes over other workers' unstarted tasks (step 1 of the rule; mode
  /// on).
  [[nodiscard]] bool take_overs() const noexcept { return mode == BackupMode::on; }

  BackupOptions& set_mode(BackupMode value) noexcept {
    mode = value;
    return *this;
  }
  BackupOptions& set_threshold_multiple(double value) noexcept {
    threshold_multiple = value;
    return *this;
  }
  BackupOptions& set_max_copies(std::size_t value) noexcept {
    max_copies = value;
    return *this;
  }
  BackupOptions& set_min_overdue(double value) noexcept {
    min_overdue = value;
    return *this;
  }
  friend bool operator==(const BackupOptions&, const BackupOptions&) = default;
};

/// One worker of a batch in progress, as the rule sees it at one instant.
struct BackupWorker {
  double mean = 0.0;          ///< its learned mean task time (Policy::stats); 0 when unknown
  std::size_t unstarted = 0;  ///< tasks of the batch queued on it and not started
  bool running = false;       ///< it runs a copy of one of the batch's tasks
  double elapsed = 0.0;       ///< how long that copy has run
  std::size_t copies = 0;     ///< copies of that task running now, this one included
  /// Idle and free to help: it had a share of the batch and has finished it. A worker the
  /// allocation gave nothing never helps, so that backups never undo the allocation's choice.
  bool available = false;
  /// Quarantined: a task elsewhere has run far past its deadline on it (a thread runtime's
  /// stuck worker), so its unstarted tasks are expected never to finish and any available
  /// worker takes them over.
  bool stalled = false;
};

/// What one available worker should do now.
struct BackupAction {
  enum class Kind {
    none,       ///< nothing worth doing: wait for a finish or for time_to_next_overdue()
    take_over,  ///< `worker` runs the last unstarted task queued on `from`
    backup,     ///< `worker` starts a copy of the task running on `from`
  };
  Kind kind = Kind::none;
  std::size_t worker = 0;
  std::size_t from = 0;
};

/// The rule. A driver describes the batch in progress (one BackupWorker per worker) and calls
/// next() until it answers Kind::none, applying each action before the next call; then it waits
/// until a copy finishes or time_to_next_overdue() has passed, and asks again. The first copy
/// of a task to finish gives its result; the driver stops the others and reports each stopped
/// copy's running time with Policy::observe_censored().
///
/// @code
/// ata::BackupRule rule(ata::BackupOptions{}.set_mode(ata::BackupMode::on));
/// std::vector<ata::BackupWorker> view = describe_batch();  // the driver's state
/// for (auto a = rule.next(view); a.kind != ata::BackupAction::Kind::none; a = rule.next(view)) {
///   apply(a);  // moves a task or starts a copy, and updates `view`
/// }
/// double wait = rule.time_to_next_overdue(view);  // +inf: wait for a finish only
/// @endcode
///
/// The decisions, fastest available worker first (least learned mean, then lowest index):
/// 1. Take-over (mode on only): the worker whose last unstarted task is expected to finish
///    last (its running copy's expected remaining time, mean - elapsed, plus unstarted x mean)
///    gives that task to the available worker when the latter's mean is below that expected
///    finish (always, when the worker is stalled).
/// 2. Backup copy: of the running copy most overdue (largest elapsed / threshold), when fewer
///    than max_copies copies of its task run, it has run threshold_multiple x its worker's mean,
///    and at least the available worker's mean (a copy that has run t is, under heavy tails,
///    expected to need of the order of t more, so a slower copy would rarely win).
/// A worker whose mean is unknown (0) is given the largest known mean; with none known, no
/// backup copy starts.
///
/// Immutable after construction: every method is const and thread-safe.
class BackupRule {
 public:
  /// Throws ata::InvalidArgument for a threshold_multiple that is NaN or <= 1, max_copies 0, or
  /// a min_overdue that is NaN or negative. An unset min_overdue counts as 0.
  explicit BackupRule(const BackupOptions& options);

  [[nodiscard]] const BackupOptions& options() const noexcept { return options_; }

  /// The next action (Kind::none when disabled).
  [[nodiscard]] BackupAction next(std::span<const BackupWorker> workers) const;

  /// How long from this instant until next() may answer a backup copy while nothing finishes:
  /// the least time for a running copy to become overdue for the fastest available worker
  /// (0 when one already is; +infinity when none will: no available worker, no known mean, or
  /// every task at max_copies).
  [[nodiscard]] double time_to_next_overdue(std::span<const BackupWorker> workers) const;

 private:
  struct Helper {
    std::size_t worker;
    double mean;
  };
  [[nodiscard]] double known_fallback(std::span<const BackupWorker> workers) const noexcept;
  [[nodiscard]] Helper fastest_available(std::span<const BackupWorker> workers,
                                         double fallback) const noexcept;
  // The running time past which the copy on `worker` earns a backup by a helper of `helper_mean`.
  [[nodiscard]] double due(const BackupWorker& worker, double fallback,
                           double helper_mean) const noexcept;

  BackupOptions options_;
};

}  // namespace ata

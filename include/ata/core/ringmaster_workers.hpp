#pragma once
/// @file
/// Ringmaster ASGD's rule and its three worker selections, independent of the engine that runs
/// the stream: the simulator's virtual-time stream (sim::RingmasterStream) and the threads'
/// (runtime::TaskStream, driven by ata-sgd and ata-prox) ask the same object.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "ata/core/ringmaster_selection.hpp"

namespace ata {

/// Which workers a Ringmaster stream keeps busy.
enum class StreamSelection : std::uint8_t {
  all,      ///< "ringmaster": every worker, greedily
  learned,  ///< "ringmaster-ata": RingmasterSelection, from the observed times
  oracle,   ///< "ringmaster-oracle": ringmaster_fastest() of the true means (same bound slack)
};

/// The strategy names of the stream: "ringmaster", "ringmaster-ata", "ringmaster-oracle".
[[nodiscard]] std::span<const std::string_view> stream_strategy_names() noexcept;
/// The selection a stream strategy name stands for, or nullopt when it names none.
[[nodiscard]] std::optional<StreamSelection> stream_selection(std::string_view strategy) noexcept;

/// Ringmaster's rule: a gradient computed `delay` versions ago is applied iff delay < R.
[[nodiscard]] constexpr bool ringmaster_applies(std::uint64_t delay, std::size_t threshold) noexcept {
  return delay < threshold;
}

/// The share of a stream's ended tasks thrown away as stale: (discarded + stopped) / (applied +
/// discarded + stopped), 0 when none ended.
[[nodiscard]] double stale_share(std::size_t applied, std::size_t discarded,
                                 std::size_t stopped) noexcept;

/// The workers a Ringmaster stream keeps busy, for one selection, whatever runs the stream.
/// The engine reports every task that ended (observe()) and asks select() after each event.
///
/// @code
/// ata::RingmasterWorkers workers(ata::StreamSelection::learned, /*workers=*/51, /*R=*/16);
/// for (std::size_t w : workers.select()) start_task_on(w);
/// workers.observe(3, 57.5, /*stopped=*/false);
/// @endcode
///
/// - all: every worker, always;
/// - learned: RingmasterSelection, fed every observation (a stopped task as censored);
/// - oracle: ringmaster_fastest() of the true means with `learning`'s bound slack, chosen
///   again by set_true_means().
///
/// Not thread-safe: one owner (the stream's driver) calls it.
class RingmasterWorkers {
 public:
  /// `true_means` (per worker, > 0) is required by the oracle and ignored by the others.
  /// Throws ata::InvalidArgument for no workers, R = 0, an oracle without one mean per worker
  /// (or a mean NaN, infinite or <= 0), or bad learning options.
  RingmasterWorkers(StreamSelection selection, std::size_t workers, std::size_t threshold,
                    std::span<const double> true_means = {},
                    const RingmasterSelection::Options& learning = {});

  [[nodiscard]] StreamSelection selection() const noexcept { return selection_; }
  [[nodiscard]] std::size_t workers() const noexcept { return workers_; }
  [[nodiscard]] std::size_t threshold() const noexcept { return threshold_; }

  /// The workers to keep busy, ascending; never empty. Valid until the next call of a
  /// non-const method.
  [[nodiscard]] std::span<const std::size_t> select();
  /// A task of `worker` ended after `seconds`: finished (applied or discarded), or stopped
  /// (its time censored). Throws ata::InvalidArgument as RingmasterSelection::observe().
  void observe(std::size_t worker, double seconds, bool stopped);
  /// The oracle's true means changed (a scenario change): it chooses again. Throws
  /// ata::InvalidArgument for a selection other than the oracle, or bad means.
  void set_true_means(std::span<const double> means);

  /// The learned selection (StreamSelection::learned), else null.
  [[nodiscard]] const RingmasterSelection* learned() const noexcept {
    return learned_ ? &*learned_ : nullptr;
  }

 private:
  StreamSelection selection_;
  std::size_t workers_;
  std::size_t threshold_;
  double bound_slack_;  // the oracle's, as the learned selection's (Options::bound_slack)
  std::optional<RingmasterSelection> learned_;
  std::vector<std::size_t> fixed_;  // all, or the oracle's choice
};

}  // namespace ata

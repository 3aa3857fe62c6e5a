#include "ata/core/ringmaster_workers.hpp"

#include <array>
#include <numeric>
#include <string>

#include "ata/core/error.hpp"
#include "core/checks.hpp"

namespace ata {

namespace {

constexpr std::array<std::string_view, 3> kStreamStrategies{"ringmaster", "ringmaster-ata",
                                                            "ringmaster-oracle"};

}  // namespace

std::span<const std::string_view> stream_strategy_names() noexcept { return kStreamStrategies; }

std::optional<StreamSelection> stream_selection(std::string_view strategy) noexcept {
  if (strategy == kStreamStrategies[0]) return StreamSelection::all;
  if (strategy == kStreamStrategies[1]) return StreamSelection::learned;
  if (strategy == kStreamStrategies[2]) return StreamSelection::oracle;
  return std::nullopt;
}

double stale_share(std::size_t applied, std::size_t discarded, std::size_t stopped) noexcept {
  const std::size_t ended = applied + discarded + stopped;
  return ended == 0 ? 0.0 : static_cast<double>(discarded + stopped) / static_cast<double>(ended);
}

RingmasterWorkers::RingmasterWorkers(StreamSelection selection, std::size_t workers,
                                     std::size_t threshold, std::span<const double> true_means,
                                     const RingmasterSelection::Options& learning)
    : selection_(selection),
      workers_(workers),
      threshold_(threshold),
      bound_slack_(learning.bound_slack) {
  if (workers == 0) throw InvalidArgument("a Ringmaster stream needs at least one worker");
  if (threshold == 0) {
    throw InvalidArgument("Ringmaster's delay threshold R must be >= 1, got 0");
  }
  switch (selection) {
    case StreamSelection::all:
      fixed_.resize(workers);
      std::iota(fixed_.begin(), fixed_.end(), std::size_t{0});
      break;
    case StreamSelection::learned:
      learned_.emplace(workers, threshold, learning);
      break;
    case StreamSelection::oracle:
      set_true_means(true_means);
      break;
  }
}

std::span<const std::size_t> RingmasterWorkers::select() {
  return learned_ ? learned_->select() : std::span<const std::size_t>(fixed_);
}

void RingmasterWorkers::observe(std::size_t worker, double seconds, bool stopped) {
  detail::require_worker_index(worker, workers_);
  if (!learned_) return;
  learned_->observe(worker, seconds,
                    stopped ? RingmasterSelection::Outcome::censored
                            : RingmasterSelection::Outcome::complete);
}

void RingmasterWorkers::set_true_means(std::span<const double> means) {
  if (selection_ != StreamSelection::oracle) {
    throw InvalidArgument("only ringmaster-oracle's selection is chosen from the true means");
  }
  if (means.size() != workers_) {
    throw InvalidArgument("ringmaster-oracle needs one true mean per worker: " +
                          std::to_string(means.size()) + " for " + std::to_string(workers_) +
                          " workers");
  }
  fixed_ = ringmaster_fastest(means, threshold_, bound_slack_);
}

}  // namespace ata

#include "ata/runtime/pool_options.hpp"

#include <string>
#include <utility>

#include "ata/core/error.hpp"
#include "core/checks.hpp"

namespace ata::runtime {

namespace detail {

template <class Options>
LaneOptionsBase<Options>::LaneOptionsBase(std::size_t workers) : slowdowns_(workers) {
  if (workers == 0) throw InvalidArgument("a worker pool needs at least one worker, got 0");
}

template <class Options>
Options LaneOptionsBase<Options>::from_scenario(const models::Scenario& scenario,
                                                std::chrono::nanoseconds unit,
                                                Slowdown::Kind kind) {
  if (kind != Slowdown::Kind::sleep && kind != Slowdown::Kind::burn) {
    throw InvalidArgument("a pool from scenario '" + scenario.name() +
                          "' sleeps or burns its delays; other slowdown kinds draw none");
  }
  Options options(scenario.workers());
  std::vector<Slowdown>& slowdowns = static_cast<LaneOptionsBase&>(options).slowdowns_;
  // Names the worker (and round) in a refusal of the slowdown itself.
  const auto where = [&](std::size_t worker, const InvalidArgument& e) {
    return InvalidArgument("worker " + std::to_string(worker) + " of scenario '" + scenario.name() +
                           "': " + e.what());
  };
  for (std::size_t i = 0; i < scenario.workers(); ++i) {
    const models::TimeModel& model = scenario.models()[i];
    try {
      slowdowns[i] = kind == Slowdown::Kind::sleep ? Slowdown::sleep(model, unit)
                                                   : Slowdown::burn(model, unit);
    } catch (const InvalidArgument& e) {
      throw where(i, e);
    }
  }
  for (const models::WorkerChange& change : scenario.changes()) {
    try {
      slowdowns[change.worker].change_at(change.round, change.model);
    } catch (const InvalidArgument& e) {
      throw where(change.worker, e);
    }
  }
  return options;
}

template <class Options>
Options& LaneOptionsBase<Options>::set_slowdown(std::size_t worker, Slowdown slowdown) {
  ata::detail::require_worker_index(worker, workers());
  slowdowns_[worker] = std::move(slowdown);
  return static_cast<Options&>(*this);
}

template <class Options>
Options& LaneOptionsBase<Options>::set_all_slowdowns(const Slowdown& slowdown) {
  for (auto& s : slowdowns_) s = slowdown;
  return static_cast<Options&>(*this);
}

template <class Options>
Options& LaneOptionsBase<Options>::set_idle_spin(std::chrono::nanoseconds spin) {
  if (spin < std::chrono::nanoseconds{0}) {
    throw InvalidArgument("idle spin must be >= 0 ns, got " + std::to_string(spin.count()) + " ns");
  }
  idle_spin_ = spin;
  return static_cast<Options&>(*this);
}

template <class Options>
Options& LaneOptionsBase<Options>::set_seed(std::uint64_t seed) noexcept {
  seed_ = seed;
  return static_cast<Options&>(*this);
}

template <class Options>
const Slowdown& LaneOptionsBase<Options>::slowdown(std::size_t worker) const {
  ata::detail::require_worker_index(worker, workers());
  return slowdowns_[worker];
}

}  // namespace detail

template class detail::LaneOptionsBase<LaneOptions>;
template class detail::LaneOptionsBase<PoolOptions>;

PoolOptions::PoolOptions(const LaneOptions& lanes) : PoolOptions(lanes.workers()) {
  for (std::size_t i = 0; i < lanes.workers(); ++i) set_slowdown(i, lanes.slowdown(i));
  set_seed(lanes.seed()).set_idle_spin(lanes.idle_spin());
}

PoolOptions& PoolOptions::set_cpu(std::size_t worker, unsigned cpu) {
  ata::detail::require_worker_index(worker, workers());
  cpus_[worker] = cpu;
  return *this;
}

std::optional<unsigned> PoolOptions::cpu(std::size_t worker) const {
  ata::detail::require_worker_index(worker, workers());
  return cpus_[worker];
}

}  // namespace ata::runtime

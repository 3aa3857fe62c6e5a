#include "ata/runtime/pool_options.hpp"

#include <string>
#include <utility>

#include "ata/core/error.hpp"
#include "core/checks.hpp"

namespace ata::runtime {

PoolOptions::PoolOptions(std::size_t workers) : slowdowns_(workers), cpus_(workers) {
  if (workers == 0) throw InvalidArgument("a worker pool needs at least one worker, got 0");
}

PoolOptions PoolOptions::from_scenario(const models::Scenario& scenario,
                                       std::chrono::nanoseconds unit, Slowdown::Kind kind) {
  if (kind != Slowdown::Kind::sleep && kind != Slowdown::Kind::burn) {
    throw InvalidArgument("a pool from scenario '" + scenario.name() +
                          "' sleeps or burns its delays; other slowdown kinds draw none");
  }
  PoolOptions options(scenario.workers());
  // Names the worker (and round) in a refusal of the slowdown itself.
  const auto where = [&](std::size_t worker, const InvalidArgument& e) {
    return InvalidArgument("worker " + std::to_string(worker) + " of scenario '" + scenario.name() +
                           "': " + e.what());
  };
  for (std::size_t i = 0; i < scenario.workers(); ++i) {
    const models::TimeModel& model = scenario.models()[i];
    try {
      options.slowdowns_[i] = kind == Slowdown::Kind::sleep ? Slowdown::sleep(model, unit)
                                                            : Slowdown::burn(model, unit);
    } catch (const InvalidArgument& e) {
      throw where(i, e);
    }
  }
  for (const models::WorkerChange& change : scenario.changes()) {
    try {
      options.slowdowns_[change.worker].change_at(change.round, change.model);
    } catch (const InvalidArgument& e) {
      throw where(change.worker, e);
    }
  }
  return options;
}

PoolOptions& PoolOptions::set_slowdown(std::size_t worker, Slowdown slowdown) {
  detail::require_worker_index(worker, workers());
  slowdowns_[worker] = std::move(slowdown);
  return *this;
}

PoolOptions& PoolOptions::set_all_slowdowns(const Slowdown& slowdown) {
  for (auto& s : slowdowns_) s = slowdown;
  return *this;
}

PoolOptions& PoolOptions::set_cpu(std::size_t worker, unsigned cpu) {
  detail::require_worker_index(worker, workers());
  cpus_[worker] = cpu;
  return *this;
}

PoolOptions& PoolOptions::set_idle_spin(std::chrono::nanoseconds spin) {
  if (spin < std::chrono::nanoseconds{0}) {
    throw InvalidArgument("idle spin must be >= 0 ns, got " + std::to_string(spin.count()) + " ns");
  }
  idle_spin_ = spin;
  return *this;
}

PoolOptions& PoolOptions::set_seed(std::uint64_t seed) noexcept {
  seed_ = seed;
  return *this;
}

const Slowdown& PoolOptions::slowdown(std::size_t worker) const {
  detail::require_worker_index(worker, workers());
  return slowdowns_[worker];
}

std::optional<unsigned> PoolOptions::cpu(std::size_t worker) const {
  detail::require_worker_index(worker, workers());
  return cpus_[worker];
}

}  // namespace ata::runtime

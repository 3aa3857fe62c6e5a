#include "training_lanes.hpp"

#include <utility>  // before Asio: g++ 12 needs it there

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_scheduler_observer.h>
#include <optional>
#include <system_error>
#include <thread>
#include <vector>

#include "ata/core/error.hpp"
#include "ata/runtime/arena_lanes.hpp"
#include "ata/runtime/asio_lanes.hpp"
#include "ata/runtime/pool_options.hpp"
#include "ata/runtime/worker_pool.hpp"

#ifdef __linux__
#include <pthread.h>
#include <sched.h>
#endif

namespace ata::ml {

namespace {

template <class T>
std::string comma_list(const std::vector<T>& values) {
  std::string out;
  for (const auto& v : values) {
    if (!out.empty()) out += ',';
    out += std::to_string(v);
  }
  return out;
}

void require_length(const char* what, std::size_t length, std::size_t workers) {
  if (length != 0 && length != workers) {
    throw InvalidArgument(std::string(what) + ": " + std::to_string(length) + " values for " +
                          std::to_string(workers) + " workers; give one per worker");
  }
}

// The slowdowns and seed of config's workers (lanes on threads they do not own: those
// threads are pinned where they are made).
runtime::LaneOptions lane_options(const TrainingConfig& config) {
  const std::size_t n = config.scenario.workers();
  require_length("CPUs", config.cpus.size(), n);
  require_length("work factors", config.work_factors.size(), n);
  auto options = config.simulated_delays ? runtime::LaneOptions::from_scenario(
                                               config.scenario, config.unit,
                                               config.burn ? runtime::Slowdown::Kind::burn
                                                           : runtime::Slowdown::Kind::sleep)
                                         : runtime::LaneOptions(n);
  if (!config.work_factors.empty() && config.simulated_delays) {
    // A worker's slowdown is one kind: a simulated delay or repeated work.
    throw InvalidArgument("work factors need workers without simulated delays (scenario none)");
  }
  for (std::size_t i = 0; i < config.work_factors.size(); ++i) {
    if (config.work_factors[i] != 1) {
      options.set_slowdown(i, runtime::Slowdown::repeat(config.work_factors[i]));
    }
  }
  options.set_seed(config.seed);
  return options;
}

// The same for a WorkerPool, whose threads are pinned to config's CPUs.
runtime::PoolOptions pool_options(const TrainingConfig& config) {
  runtime::PoolOptions options(lane_options(config));
  for (std::size_t i = 0; i < config.cpus.size(); ++i) options.set_cpu(i, config.cpus[i]);
  return options;
}

#ifdef __linux__
cpu_set_t cpus_of_this_thread() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) {
    throw Error("cannot read the CPUs this process may use");
  }
  return set;
}

void require_usable(const std::vector<unsigned>& cpus) {
  if (cpus.empty()) return;
  const cpu_set_t allowed = cpus_of_this_thread();
  for (std::size_t i = 0; i < cpus.size(); ++i) {
    if (cpus[i] >= CPU_SETSIZE || !CPU_ISSET(cpus[i], &allowed)) {
      throw InvalidArgument("worker " + std::to_string(i) + " is pinned to CPU " +
                            std::to_string(cpus[i]) + ", which this process may not use");
    }
  }
}

bool pin(pthread_t thread, unsigned cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(thread, sizeof set, &set) == 0;
}

// Pins every thread that enters `arena` to one CPU and gives it the process's CPUs back when it
// leaves: TBB's worker threads move between arenas, and each serves the arena it is in.
class PinningObserver final : public oneapi::tbb::task_scheduler_observer {
 public:
  PinningObserver(oneapi::tbb::task_arena& arena, unsigned cpu)
      : oneapi::tbb::task_scheduler_observer(arena), cpu_(cpu), allowed_(cpus_of_this_thread()) {
    observe(true);
  }
  ~PinningObserver() override { observe(false); }
  PinningObserver(const PinningObserver&) = delete;
  PinningObserver& operator=(const PinningObserver&) = delete;

  // No exception may leave a TBB callback: a failure is kept for failed().
  void on_scheduler_entry(bool /*is_worker*/) override {
    if (!pin(pthread_self(), cpu_)) failed_.store(true, std::memory_order_relaxed);
  }
  void on_scheduler_exit(bool /*is_worker*/) override {
    if (pthread_setaffinity_np(pthread_self(), sizeof allowed_, &allowed_) != 0) {
      failed_.store(true, std::memory_order_relaxed);
    }
  }
  [[nodiscard]] bool failed() const noexcept { return failed_.load(std::memory_order_relaxed); }
  [[nodiscard]] unsigned cpu() const noexcept { return cpu_; }

 private:
  unsigned cpu_;
  cpu_set_t allowed_;  // the CPUs of the thread that made the lanes: the process's
  std::atomic<bool> failed_{false};
};
#else
void require_usable(const std::vector<unsigned>& cpus) {
  if (!cpus.empty()) throw InvalidArgument("pinning workers to CPUs needs Linux");
}
#endif

[[noreturn]] void cannot_start(std::size_t workers, const std::system_error& e) {
  // The system's limit on threads, or on memory for stacks.
  throw Error("cannot start " + std::to_string(workers) + " worker threads: " + e.code().message() +
              " (use fewer workers)");
}

}  // namespace

struct TrainingLanes::Parts {
  virtual ~Parts() = default;
  virtual runtime::Lanes& lanes() noexcept = 0;
  /// Throws ata::Error if a thread could not be pinned after the lanes were made.
  virtual void check_pinned() const {}
};

namespace {

struct ThreadParts final : TrainingLanes::Parts {
  explicit ThreadParts(const TrainingConfig& config) : pool(pool_options(config)) {}
  runtime::Lanes& lanes() noexcept override { return pool; }
  runtime::WorkerPool pool;
};

// One io_context per worker, each run by a thread of its own (kept running by a work guard),
// as a service owning its event loops would give them.
struct AsioParts final : TrainingLanes::Parts {
  using Guard = boost::asio::executor_work_guard<boost::asio::io_context::executor_type>;

  explicit AsioParts(const TrainingConfig& config) {
    const std::size_t n = config.scenario.workers();
    const auto options = lane_options(config);
    try {
      std::vector<boost::asio::any_io_executor> executors;
      for (std::size_t i = 0; i < n; ++i) {
        contexts.push_back(std::make_unique<boost::asio::io_context>(1));
        guards.push_back(boost::asio::make_work_guard(*contexts.back()));
        threads.emplace_back([context = contexts.back().get()] { context->run(); });
#ifdef __linux__
        if (!config.cpus.empty() && !pin(threads.back().native_handle(), config.cpus[i])) {
          throw Error("cannot pin the thread of worker " + std::to_string(i) + " to CPU " +
                      std::to_string(config.cpus[i]));
        }
#endif
        executors.push_back(contexts.back()->get_executor());
      }
      asio_lanes.emplace(executors, options);
    } catch (...) {
      stop();
      throw;
    }
  }
  ~AsioParts() override {
    asio_lanes.reset();  // waits for the chunks running on the threads
    stop();
  }
  AsioParts(const AsioParts&) = delete;
  AsioParts& operator=(const AsioParts&) = delete;
  runtime::Lanes& lanes() noexcept override { return *asio_lanes; }

  void stop() {
    guards.clear();  // run() returns once the work posted so far is done
    for (auto& thread : threads) thread.join();
    threads.clear();
  }

  std::vector<std::unique_ptr<boost::asio::io_context>> contexts;
  std::vector<Guard> guards;
  std::vector<std::thread> threads;
  std::optional<runtime::AsioLanes> asio_lanes;
};

// One arena of concurrency 1 per worker, its slot reserved for the lane's own thread, which is
// pinned while it is in the arena. Destroyed in reverse: observers, lanes, arenas.
struct ArenaParts final : TrainingLanes::Parts {
  explicit ArenaParts(const TrainingConfig& config) {
    const std::size_t n = config.scenario.workers();
    std::vector<oneapi::tbb::task_arena*> pointers;
    for (std::size_t i = 0; i < n; ++i) {
      arenas.push_back(std::make_unique<oneapi::tbb::task_arena>(1, 1));
      pointers.push_back(arenas.back().get());
    }
    arena_lanes.emplace(pointers, lane_options(config));
#ifdef __linux__
    // After the lanes raised TBB's thread limit: an arena started before asks for too few.
    for (std::size_t i = 0; i < config.cpus.size(); ++i) {
      observers.push_back(std::make_unique<PinningObserver>(*arenas[i], config.cpus[i]));
    }
#endif
  }
  ~ArenaParts() override {
    arena_lanes->shutdown();  // no thread in an arena any more before its observer goes
    observers.clear();
  }
  ArenaParts(const ArenaParts&) = delete;
  ArenaParts& operator=(const ArenaParts&) = delete;
  runtime::Lanes& lanes() noexcept override { return *arena_lanes; }
#ifdef __linux__
  void check_pinned() const override {
    for (std::size_t i = 0; i < observers.size(); ++i) {
      if (observers[i]->failed()) {
        throw Error("cannot pin a oneTBB thread of worker " + std::to_string(i) + " to CPU " +
                    std::to_string(observers[i]->cpu()));
      }
    }
  }
#endif

  std::vector<std::unique_ptr<oneapi::tbb::task_arena>> arenas;
  std::optional<runtime::ArenaLanes> arena_lanes;
#ifdef __linux__
  std::vector<std::unique_ptr<PinningObserver>> observers;
#endif
};

}  // namespace

TrainingLanes::TrainingLanes(const TrainingConfig& config) {
  require_usable(config.cpus);
  try {
    switch (config.lanes) {
      case LaneKind::threads:
        parts_ = std::make_unique<ThreadParts>(config);
        break;
      case LaneKind::asio:
        parts_ = std::make_unique<AsioParts>(config);
        break;
      case LaneKind::tbb:
        parts_ = std::make_unique<ArenaParts>(config);
        break;
    }
  } catch (const std::system_error& e) {
    cannot_start(config.scenario.workers(), e);
  }
}

TrainingLanes::~TrainingLanes() = default;

runtime::Lanes& TrainingLanes::lanes() noexcept { return parts_->lanes(); }

void TrainingLanes::check_pinned() const { parts_->check_pinned(); }

std::string describe_lanes(const TrainingConfig& config) {
  const std::string n = std::to_string(config.scenario.workers());
  std::string out;
  switch (config.lanes) {
    case LaneKind::threads:
      out = n + " threads";
      break;
    case LaneKind::asio:
      out = n + " Asio io_contexts, a thread each";
      break;
    case LaneKind::tbb:
      out = n + " oneTBB arenas of concurrency 1";
      break;
  }
  if (!config.cpus.empty()) out += ", pinned to CPUs " + comma_list(config.cpus);
  if (!config.work_factors.empty()) out += "; work factors " + comma_list(config.work_factors);
  return out;
}

}  // namespace ata::ml

// The batch scheduler on heterogeneous workers, every strategy side by side in one run: n = 8
// threads that sleep the task times of the simulator's "linear" preset (X_i = 29 i + Exp(29 i)
// model units; 1 unit = 50 us, so mean task times run from 2.9 ms to 23.2 ms), B = 23, 200
// rounds per strategy. Prints wall and worker time as ratios to OFTA, next to the same
// strategies in virtual time (ata::sim::Simulation, same cluster, same seed), and the
// scheduler's own overhead per round (wall time minus the busiest worker's busy time).
// --lanes picks where the n workers run: threads (a WorkerPool), asio (AsioLanes on one
// boost::asio::thread_pool of n threads) or tbb (ArenaLanes, n arenas of concurrency 1).
//   ./build/bench/ata_bench_heterogeneous [--rounds 200] [--unit-us 50] [--preset linear]
//                                         [--lanes threads|asio|tbb]
#include <utility>  // before Asio (g++ 12)

#include <CLI/CLI.hpp>
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ata/ata.hpp"
#include "ata/runtime/arena_lanes.hpp"
#include "ata/runtime/asio_lanes.hpp"
#include "ata/sim/simulation.hpp"

namespace {

using Seconds = std::chrono::duration<double>;

struct Totals {
  double wall = 0.0;      // seconds
  double worker = 0.0;    // seconds
  double overhead = 0.0;  // seconds, threads only
  double worst_overhead = 0.0;
};

struct Config {
  std::string preset = "linear";
  std::size_t workers = 8;
  std::size_t batch = 23;
  std::size_t rounds = 200;
  double unit_us = 50.0;
  std::uint64_t seed = 1;
  std::string lanes = "threads";
};

// The lanes of one strategy's run, and the executor they post to (destroyed after them).
class LaneHost {
 public:
  LaneHost(const std::string& kind, const ata::runtime::PoolOptions& options) {
    const std::size_t n = options.workers();
    if (kind == "threads") {
      lanes_ = std::make_unique<ata::runtime::WorkerPool>(options);
    } else if (kind == "asio") {
      pool_.emplace(n);
      lanes_ = std::make_unique<ata::runtime::AsioLanes>(
          std::vector<boost::asio::any_io_executor>(n, pool_->get_executor()), options);
    } else {
      std::vector<oneapi::tbb::task_arena::constraints> parts(n);
      for (auto& part : parts) part.set_max_concurrency(1);
      lanes_ = std::make_unique<ata::runtime::ArenaLanes>(parts, options);
    }
  }
  ~LaneHost() {
    lanes_.reset();
    if (pool_) pool_->join();
  }
  LaneHost(const LaneHost&) = delete;
  LaneHost& operator=(const LaneHost&) = delete;

  ata::runtime::Lanes& lanes() { return *lanes_; }

 private:
  std::optional<boost::asio::thread_pool> pool_;
  std::unique_ptr<ata::runtime::Lanes> lanes_;
};

std::unique_ptr<ata::Policy> make(const std::string& name, const ata::sim::Scenario& seconds) {
  ata::PolicyOptions options;
  options.alpha = seconds.max_mean();  // the paper's choice for ATA
  options.eta = 1.0;
  options.means = seconds.means();
  return ata::make_policy(name, seconds.workers(), options);
}

Totals run_threads(const Config& c, const ata::sim::Scenario& scenario, const std::string& name) {
  const auto unit = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::duration<double, std::micro>(c.unit_us));
  LaneHost host(c.lanes, ata::runtime::PoolOptions::from_scenario(scenario, unit).set_seed(c.seed));
  auto policy = make(name, scenario.scaled(Seconds(unit).count()));
  ata::runtime::BatchScheduler scheduler(host.lanes(), *policy);
  Totals t;
  for (std::size_t k = 0; k < c.rounds; ++k) {
    const auto report = scheduler.run(c.batch, [](const ata::runtime::TaskContext&) {}).report;
    const double overhead = Seconds(report.overhead()).count();
    t.wall += Seconds(report.wall).count();
    t.worker += Seconds(report.worker_time()).count();
    t.overhead += overhead;
    t.worst_overhead = std::max(t.worst_overhead, overhead);
  }
  return t;
}

Totals run_virtual(const Config& c, const ata::sim::Scenario& seconds, const std::string& name) {
  auto policy = make(name, seconds);
  ata::sim::Simulation simulation(seconds, *policy, c.batch, c.seed);
  Totals t;
  for (std::size_t k = 0; k < c.rounds; ++k) {
    const auto record = simulation.run_round();
    t.wall += record.wall_time;
    t.worker += record.worker_time;
  }
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  Config c;
  CLI::App app{
      "ata_bench_heterogeneous: strategies on sleeping heterogeneous threads vs virtual time"};
  app.add_option("--preset", c.preset, "simulator preset (ata::sim::preset_names())");
  app.add_option("--workers", c.workers, "n")->check(CLI::PositiveNumber);
  app.add_option("--batch", c.batch, "B")->check(CLI::PositiveNumber);
  app.add_option("--rounds", c.rounds, "rounds per strategy")->check(CLI::PositiveNumber);
  app.add_option("--unit-us", c.unit_us, "microseconds of sleep per model unit")
      ->check(CLI::PositiveNumber);
  app.add_option("--seed", c.seed, "run seed (lanes and simulator)");
  app.add_option("--lanes", c.lanes, "where the workers run: threads, asio or tbb")
      ->check(CLI::IsMember({"threads", "asio", "tbb"}));
  CLI11_PARSE(app, argc, argv);

  try {
    const auto scenario = ata::sim::make_preset(c.preset, c.workers);
    const auto seconds = scenario.scaled(c.unit_us * 1e-6);
    std::printf("preset %s, n = %zu, B = %zu, %zu rounds, 1 unit = %g us, seed %llu, lanes %s\n",
                c.preset.c_str(), c.workers, c.batch, c.rounds, c.unit_us,
                static_cast<unsigned long long>(c.seed), c.lanes.c_str());
    std::printf("%-6s | %9s %6s | %9s %6s | %10s %10s | %12s %10s %12s\n", "", "wall (s)", "/OFTA",
                "worker (s)", "/OFTA", "sim wall", "sim worker", "overhead/rnd", "of wall",
                "worst rnd");
    Totals oracle_threads;
    Totals oracle_virtual;
    for (const std::string name : {"ofta", "ata", "ata-e", "gta", "pull"}) {
      const Totals t = run_threads(c, scenario, name);
      const Totals v = run_virtual(c, seconds, name);
      if (name == "ofta") {
        oracle_threads = t;
        oracle_virtual = v;
      }
      std::printf("%-6s | %9.3f %6.2f | %9.3f %6.2f | %10.2f %10.2f | %9.1f us %9.2f%% %9.1f us\n",
                  name.c_str(), t.wall, t.wall / oracle_threads.wall, t.worker,
                  t.worker / oracle_threads.worker, v.wall / oracle_virtual.wall,
                  v.worker / oracle_virtual.worker,
                  1e6 * t.overhead / static_cast<double>(c.rounds), 100.0 * t.overhead / t.wall,
                  1e6 * t.worst_overhead);
      std::fflush(stdout);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ata_bench_heterogeneous: %s\n", e.what());
    return 1;
  }
  return 0;
}

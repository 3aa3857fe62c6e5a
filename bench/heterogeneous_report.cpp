// The batch scheduler on heterogeneous workers, every strategy side by side in one run: n = 8
// threads that sleep the task times of the simulator's "linear" preset (X_i = 29 i + Exp(29 i)
// model units; 1 unit = 50 us, so mean task times run from 2.9 ms to 23.2 ms), B = 23, 200
// rounds per strategy. Prints wall and worker time as ratios to OFTA, next to the same
// strategies in virtual time (ata::sim::Simulation, same cluster, same seed), and the
// scheduler's own overhead per round (wall time minus the busiest worker's busy time).
// --outage P makes each attempt hang with probability P until --timeout-multiple x its
// worker's mean; --backups on|copies|off runs the allocated strategies with backup tasks on
// threads and in virtual time alike, and then every ratio is to OFTA *without* backups (run
// once more as the reference), the issue 11 comparison (docs/stragglers.md).
// --lanes picks where the n workers run: threads (a WorkerPool), asio (AsioLanes on one
// boost::asio::thread_pool of n threads) or tbb (ArenaLanes, n arenas of concurrency 1).
// --scenario FILE takes the workers from a JSON scenario file instead of a preset (lognormal
// tails, for restart budgets: race:M@F).
//   ./build/bench/ata_bench_heterogeneous [--rounds 200] [--unit-us 50] [--preset linear]
//       [--scenario FILE] [--outage 0.01 --backups on --strategies ofta,ata-auto] [--lanes threads|asio|tbb]
#include <utility>  // before Asio (g++ 12)

#include <CLI/CLI.hpp>
#include <algorithm>
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "ata/ata.hpp"
#include "ata/runtime/arena_lanes.hpp"
#include "ata/runtime/asio_lanes.hpp"
#include "ata/sim/experiment.hpp"
#include "ata/sim/simulation.hpp"

namespace {

using Seconds = std::chrono::duration<double>;

struct Totals {
  double wall = 0.0;      // seconds
  double worker = 0.0;    // seconds
  double overhead = 0.0;  // seconds, threads only
  double worst_overhead = 0.0;
  std::size_t takeovers = 0;
  std::size_t backup_copies = 0;
  std::vector<ata::sim::PlayedPlan> played;  // ata-auto's plans (sim::played_plans)
};

// "race:4 80%, quotas 20%": the shares of the rounds.
std::string shares(const std::vector<ata::sim::PlayedPlan>& played, std::size_t rounds) {
  std::string text;
  for (const auto& p : played) {
    text += (text.empty() ? "" : ", ") + p.plan + " " +
            std::to_string(100 * p.rounds / rounds) + "%";
  }
  return text;
}

struct Config {
  std::string preset = "linear";
  std::string scenario_file;  // overrides preset and workers
  std::size_t workers = 8;
  std::size_t batch = 23;
  std::size_t rounds = 200;
  double unit_us = 50.0;
  std::uint64_t seed = 1;
  double outage = 0.0;              // probability that an attempt hangs
  double timeout_multiple = 100.0;  // how long it hangs, x its worker's mean
  std::string backups = "off";
  std::string strategies = "ofta,ata,ata-e,gta,pull";
  std::string lanes = "threads";
};

// The lanes of one strategy's run, and the executor they post to (destroyed after them).
class LaneHost {
 public:
  LaneHost(const std::string& kind, const ata::runtime::LaneOptions& options) {
    const std::size_t n = options.workers();
    if (kind == "threads") {
      lanes_ = std::make_unique<ata::runtime::WorkerPool>(ata::runtime::PoolOptions(options));
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

// The --backups mode, the same on threads and in virtual time (the rule's other settings at
// their defaults, min_overdue the driver's).
ata::BackupOptions backups_named(const std::string& name) {
  return ata::BackupOptions{}.set_mode(ata::parse_backup_mode(name));
}

// The preset, each worker's attempts hanging with probability `outage`.
ata::models::Scenario with_outage(const ata::models::Scenario& base, double outage,
                                  double multiple) {
  if (outage <= 0.0) return base;
  std::vector<ata::models::TimeModel> models;
  for (const auto& model : base.models()) {
    models.push_back(ata::models::TimeModel::outage(model, outage, multiple * model.mean()));
  }
  return ata::models::Scenario(base.name() + "+outage", std::move(models));
}

std::unique_ptr<ata::Policy> make(const std::string& name, const ata::models::Scenario& seconds) {
  ata::PolicyOptions options;
  options.alpha = seconds.max_mean();  // the paper's choice for ATA
  options.eta = 1.0;
  options.means = seconds.means();
  // ata-auto learns its plan as in ata-sgd: quotas or a fungible race of its fastest (with
  // restart budgets on tails heavier than exponential, which the presets here do not have).
  options.race = ata::RaceKind::fungible;
  return ata::make_policy(name, seconds.workers(), options);
}

// One strategy on lanes of its own.
struct ThreadRun {
  ThreadRun(const Config& c, const ata::models::Scenario& scenario, const std::string& name,
            const std::string& backups, std::chrono::nanoseconds unit)
      : host(c.lanes, ata::runtime::LaneOptions::from_scenario(scenario, unit).set_seed(c.seed)),
        policy(make(name, scenario.scaled(Seconds(unit).count()))),
        scheduler(host.lanes(), *policy,
                  ata::runtime::SchedulerOptions{}.set_backups(backups_named(backups))) {}
  LaneHost host;
  std::unique_ptr<ata::Policy> policy;
  ata::runtime::BatchScheduler scheduler;
  Totals totals;
};

// Each (strategy, backups) on its own pool, round k of each before round k + 1 of any: the
// machine's load (2 cores shared with builds) drifts over a run, and interleaving the rounds
// lets the drift fall on every strategy alike.
std::vector<Totals> run_threads(const Config& c, const ata::models::Scenario& scenario,
                                const std::vector<std::pair<std::string, std::string>>& runs) {
  const auto unit = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::duration<double, std::micro>(c.unit_us));
  std::vector<std::unique_ptr<ThreadRun>> live;
  for (const auto& [name, backups] : runs) {
    live.push_back(std::make_unique<ThreadRun>(c, scenario, name, backups, unit));
  }
  for (std::size_t k = 0; k < c.rounds; ++k) {
    for (auto& run : live) {
      const auto report =
          run->scheduler.run(c.batch, [](const ata::runtime::TaskContext&) {}).report;
      Totals& t = run->totals;
      const double overhead = Seconds(report.overhead()).count();
      t.wall += Seconds(report.wall).count();
      t.worker += Seconds(report.worker_time()).count();
      t.takeovers += report.takeovers;
      t.backup_copies += report.backup_copies;
      t.overhead += overhead;
      t.worst_overhead = std::max(t.worst_overhead, overhead);
    }
  }
  std::vector<Totals> totals;
  for (const auto& run : live) {
    totals.push_back(run->totals);
    totals.back().played = ata::sim::played_plans(*run->policy);
  }
  return totals;
}

Totals run_virtual(const Config& c, const ata::models::Scenario& seconds, const std::string& name,
                   const std::string& backups) {
  auto policy = make(name, seconds);
  ata::sim::Simulation simulation(seconds, *policy, c.batch, c.seed, backups_named(backups));
  Totals t;
  for (std::size_t k = 0; k < c.rounds; ++k) {
    const auto record = simulation.run_round();
    t.wall += record.wall_time;
    t.worker += record.worker_time;
    t.takeovers += record.takeovers;
    t.backup_copies += record.backup_copies;
  }
  t.played = ata::sim::played_plans(*policy);
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  Config c;
  CLI::App app{
      "ata_bench_heterogeneous: strategies on sleeping heterogeneous threads vs virtual time"};
  app.add_option("--preset", c.preset, "simulator preset (ata::models::preset_names())");
  app.add_option("--scenario", c.scenario_file,
                 "JSON scenario file (the README's scenario files), instead of --preset and --workers");
  app.add_option("--workers", c.workers, "n")->check(CLI::PositiveNumber);
  app.add_option("--batch", c.batch, "B")->check(CLI::PositiveNumber);
  app.add_option("--rounds", c.rounds, "rounds per strategy")->check(CLI::PositiveNumber);
  app.add_option("--unit-us", c.unit_us, "microseconds of sleep per model unit")
      ->check(CLI::PositiveNumber);
  app.add_option("--seed", c.seed, "run seed (lanes and simulator)");
  app.add_option("--lanes", c.lanes, "where the workers run: threads, asio or tbb")
      ->check(CLI::IsMember({"threads", "asio", "tbb"}));
  app.add_option("--outage", c.outage, "probability that an attempt hangs (0: none)")
      ->check(CLI::Range(0.0, 0.5));
  app.add_option("--timeout-multiple", c.timeout_multiple,
                 "how long a hung attempt takes, x its worker's mean")
      ->check(CLI::PositiveNumber);
  // Checked by ata::parse_backup_mode() below: one list of names.
  app.add_option("--backups", c.backups, "backup tasks of allocated strategies: off, copies or on");
  app.add_option("--strategies", c.strategies, "comma-separated policy names");
  CLI11_PARSE(app, argc, argv);

  try {
    (void)backups_named(c.backups);  // a bad --backups fails before anything is printed
    if (!c.scenario_file.empty()) c.preset = c.scenario_file;
    const auto scenario = with_outage(c.scenario_file.empty()
                                          ? ata::models::make_preset(c.preset, c.workers)
                                          : ata::models::load_scenario(c.scenario_file),
                                      c.outage, c.timeout_multiple);
    c.workers = scenario.workers();
    const auto seconds = scenario.scaled(c.unit_us * 1e-6);
    std::printf(
        "preset %s, n = %zu, B = %zu, %zu rounds, 1 unit = %g us, seed %llu, outage %g "
        "(%g x mean), backups %s, lanes %s\n",
        c.preset.c_str(), c.workers, c.batch, c.rounds, c.unit_us,
        static_cast<unsigned long long>(c.seed), c.outage, c.timeout_multiple, c.backups.c_str(),
        c.lanes.c_str());
    // The reference: OFTA without backups, on threads and in virtual time.
    std::vector<std::pair<std::string, std::string>> runs{{"ofta", "off"}};
    std::vector<std::string> names;
    std::stringstream list(c.strategies);
    for (std::string name; std::getline(list, name, ',');) {
      names.push_back(name);
      if (c.backups != "off" || name != "ofta") runs.emplace_back(name, c.backups);
    }
    const std::vector<Totals> threads = run_threads(c, scenario, runs);
    const Totals& oracle_threads = threads.front();
    const Totals oracle_virtual = run_virtual(c, seconds, "ofta", "off");
    std::printf(
        "reference OFTA without backups: %.3f s wall, %.3f s worker time on threads; %.3f s, "
        "%.3f s in virtual time\n",
        oracle_threads.wall, oracle_threads.worker, oracle_virtual.wall, oracle_virtual.worker);
    std::printf("%-8s | %9s %6s | %9s %6s | %8s %8s | %7s %7s | %9s %9s | %12s %10s %10s\n",
                "", "wall (s)", "/ref", "worker (s)", "/ref", "sim wall", "sim work", "wall vs",
                "work vs", "takeovers", "copies", "overhead/rnd", "of wall", "worst rnd");
    std::vector<std::string> played;
    for (const std::string& name : names) {
      const auto at = std::find_if(runs.begin() + 1, runs.end(),
                                   [&](const auto& run) { return run.first == name; });
      const Totals& t =
          at == runs.end() ? oracle_threads : threads[static_cast<std::size_t>(at - runs.begin())];
      const Totals v = run_virtual(c, seconds, name, c.backups);
      const double wall = t.wall / oracle_threads.wall;
      const double sim_wall = v.wall / oracle_virtual.wall;
      const double work = t.worker / oracle_threads.worker;
      const double sim_work = v.worker / oracle_virtual.worker;
      std::printf(
          "%-8s | %9.3f %6.3f | %9.3f %6.3f | %8.3f %8.3f | %+6.1f%% %+6.1f%% | %4zu %4zu %4zu "
          "%4zu | %9.1f us %9.2f%% %7.1f ms\n",
          name.c_str(), t.wall, wall, t.worker, work, sim_wall, sim_work,
          100.0 * (wall / sim_wall - 1.0), 100.0 * (work / sim_work - 1.0), t.takeovers,
          v.takeovers, t.backup_copies, v.backup_copies,
          1e6 * t.overhead / static_cast<double>(c.rounds), 100.0 * t.overhead / t.wall,
          1e3 * t.worst_overhead);
      std::fflush(stdout);
      if (!t.played.empty()) {
        played.push_back(name + " played on threads: " + shares(t.played, c.rounds) +
                         "; in virtual time: " + shares(v.played, c.rounds));
      }
    }
    for (const std::string& line : played) std::printf("%s\n", line.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ata_bench_heterogeneous: %s\n", e.what());
    return 1;
  }
  return 0;
}

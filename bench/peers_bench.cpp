// ata against StarPU 1.3 on the same heterogeneous workers, and per-task overhead against
// oneTBB, Boost.Asio and Debian's libthread-pool-dev (rvaser/thread_pool), in one run
// (docs/peers.md has the measured tables and how to read them).
//
// Rounds mode: n sleeping workers, worker i's task times drawn per task from its law
// (exponential or constant, mean m_i model units, 1 unit = --unit-ms), batches of B tasks,
// K rounds. The same clusters run through
//   - StarPU's schedulers, each configuration in a child process of its own (this program,
//     re-executed with --starpu-child: StarPU reads its environment once, at starpu_init).
//     The codelet asks starpu_worker_get_id() which worker runs it and sleeps a draw of that
//     worker's law; a history-based starpu_perfmodel is attached, so dmda learns the times.
//     Calibration rounds run first, outside the measured rounds (see calibrate()).
//   - ata's strategies on a WorkerPool of the same n, the same laws and the same random
//     streams (worker i draws from ata::models::Rng(seed, i) in both), rounds interleaved.
// and prints makespan (wall) and busy worker time per round relative to ata's OFTA, one table
// per cluster.
// Overhead mode: empty tasks on 2 threads, wall time per task for each peer side by side.
//   ./build/bench/ata_bench_peers                      # both modes, ~3 minutes
//   ./build/bench/ata_bench_peers --mode rounds --law constant --rounds 100
//   ./build/bench/ata_bench_peers --mode overhead
// Debian's StarPU has at most 4 CPU workers (STARPU_MAXCPUS), and its idle workers spin
// (non-blocking drivers), so the default clusters have n = 4; "spread" and "onefast" (n = 8)
// run ata's strategies only.
#include <utility>  // before Asio (g++ 12)

#include <CLI/CLI.hpp>
#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <future>
#include <latch>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <spawn.h>
#include <starpu.h>
#include <starpu_heteroprio.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <tbb/global_control.h>
#include <tbb/task_group.h>
#include <unistd.h>
#ifdef ATA_PEERS_HAVE_THREAD_POOL
#include <thread_pool/thread_pool.hpp>
#endif

#include "ata/ata.hpp"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;
using Seconds = std::chrono::duration<double>;

struct Cluster {
  std::string name;
  std::vector<double> means;  // model units
};

const std::vector<Cluster>& clusters() {
  static const std::vector<Cluster> all{
      {"spread4", {1, 2, 4, 8}},
      {"onefast4", {1, 16, 16, 16}},
      {"spread", {1, 1, 2, 2, 4, 4, 8, 8}},
      {"onefast", {1, 16, 16, 16, 16, 16, 16, 16}},
      {"spread2", {1, 8}},  // n = 2: StarPU's workers no more than this machine's cores
      {"onefast2", {1, 16}},
  };
  return all;
}

const Cluster& cluster_named(const std::string& name) {
  for (const auto& c : clusters()) {
    if (c.name == name) return c;
  }
  throw std::invalid_argument("unknown cluster '" + name +
                              "' (spread4, onefast4, spread, onefast, spread2, onefast2)");
}

ata::models::TimeModel law_of(const std::string& law, double mean) {
  return law == "exponential" ? ata::models::TimeModel::exponential(mean)
                              : ata::models::TimeModel::constant(mean);
}

// One StarPU configuration: a scheduler and the variables its child process sets.
struct StarpuConfig {
  std::string name;
  std::string sched;
  std::vector<std::pair<std::string, std::string>> env;
};

const std::vector<StarpuConfig>& starpu_configs() {
  static const std::vector<StarpuConfig> all{
      {"eager", "eager", {}},
      {"lws", "lws", {}},
      {"heteroprio", "heteroprio", {}},
      {"dmda", "dmda", {}},
      {"dmda-core", "dmda", {{"STARPU_PERF_MODEL_HOMOGENEOUS_CPU", "0"}}},
      {"dmda-core-nofilter",
       "dmda",
       {{"STARPU_PERF_MODEL_HOMOGENEOUS_CPU", "0"}, {"STARPU_HISTORY_MAX_ERROR", "1000000000"}}},
  };
  return all;
}

const StarpuConfig& starpu_config_named(const std::string& name) {
  for (const auto& c : starpu_configs()) {
    if (c.name == name) return c;
  }
  throw std::invalid_argument("unknown StarPU configuration '" + name + "'");
}

// Every child sets these besides its configuration's own.
std::vector<std::pair<std::string, std::string>> common_env(std::size_t workers,
                                                            const std::string& home) {
  return {{"STARPU_NCPU", std::to_string(workers)},
          {"STARPU_NCUDA", "0"},
          {"STARPU_NOPENCL", "0"},
          {"STARPU_WORKERS_NOBIND", "1"},  // 2 cores, 4 workers: let the kernel place them
          {"STARPU_CALIBRATE", "1"},       // models keep learning in the measured rounds
          {"STARPU_SILENT", "1"},
          {"STARPU_HOME", home}};
}

std::vector<double> split_doubles(const std::string& text) {
  std::vector<double> values;
  std::stringstream in(text);
  for (double v; in >> v;) values.push_back(v);
  return values;
}

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, sep);) {
    if (!part.empty()) parts.push_back(part);
  }
  return parts;
}

// The machine's load (1, 5 and 15 minute averages): 2 cores are shared with other work, so
// the tables say how loaded they were.
std::string load_average() {
  std::FILE* f = std::fopen("/proc/loadavg", "r");
  if (f == nullptr) return "unknown";
  char line[128] = {};
  const bool ok = std::fgets(line, sizeof line, f) != nullptr;
  std::fclose(f);
  if (!ok) return "unknown";
  std::string text(line);
  std::istringstream in(text);
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

// ---------------------------------------------------------------------------------------
// The StarPU child.

struct ChildState {
  std::vector<ata::models::TimeModel> laws;
  double unit = 1e-3;  // seconds per model unit
  std::vector<ata::models::Rng> rngs;
  std::vector<double> busy;        // seconds, this round
  std::vector<std::size_t> tasks;  // since the last reset
};

ChildState* g_child = nullptr;

// Runs on StarPU worker starpu_worker_get_id(): sleeps a draw of that worker's law. Only that
// worker touches its slots; starpu_task_wait_for_all() orders them before the caller reads.
void sleep_task(void** /*buffers*/, void* /*arg*/) {
  const auto w = static_cast<std::size_t>(starpu_worker_get_id());
  ChildState& s = *g_child;
  const auto start = Clock::now();
  std::this_thread::sleep_for(Seconds(s.laws[w].sample(s.rngs[w]) * s.unit));
  s.busy[w] += Seconds(Clock::now() - start).count();
  ++s.tasks[w];
}

void empty_task(void** /*buffers*/, void* /*arg*/) {}

// Heteroprio needs its buckets set up at init: one priority, one bucket, CPUs only.
void init_heteroprio(unsigned ctx) {
  starpu_heteroprio_set_nb_prios(ctx, STARPU_CPU_IDX, 1);
  starpu_heteroprio_set_mapping(ctx, STARPU_CPU_IDX, 0, 0);
  starpu_heteroprio_set_faster_arch(ctx, STARPU_CPU_IDX, 0);
}

struct ChildArgs {
  std::string config;
  std::string cluster;
  std::string law = "exponential";
  std::string batches = "16,64";
  std::string home;
  std::size_t rounds = 200;
  std::size_t calibration_tasks = 10;
  double unit_ms = 1.0;
  std::uint64_t seed = 1;
  bool overhead = false;
  std::size_t repetitions = 15;
};

void start_starpu(const StarpuConfig& config, std::size_t workers, const std::string& home) {
  for (const auto& [key, value] : common_env(workers, home)) setenv(key.c_str(), value.c_str(), 1);
  // --starpu-messages: StarPU's own warnings on stderr (e.g. "Too big deviation for model
  // ..., flushing the performance model").
  if (std::getenv("ATA_PEERS_STARPU_MESSAGES") != nullptr) unsetenv("STARPU_SILENT");
  for (const auto& [key, value] : config.env) setenv(key.c_str(), value.c_str(), 1);
  starpu_conf conf;
  starpu_conf_init(&conf);
  conf.sched_policy_name = config.sched.c_str();
  conf.ncpus = static_cast<int>(workers);
  conf.ncuda = 0;
  conf.nopencl = 0;
  if (config.sched == "heteroprio") conf.sched_policy_init = &init_heteroprio;
  if (const int ret = starpu_init(&conf); ret != 0) {
    throw std::runtime_error("starpu_init failed: " + std::to_string(ret));
  }
  if (starpu_cpu_worker_get_count() != workers) {
    const unsigned got = starpu_cpu_worker_get_count();
    starpu_shutdown();
    throw std::runtime_error("StarPU started " + std::to_string(got) + " CPU workers, not " +
                             std::to_string(workers));
  }
}

// Submits `batch` tasks of `cl` and waits for them all; returns the wall time in seconds.
double starpu_round(starpu_codelet& cl, std::size_t batch) {
  const auto start = Clock::now();
  for (std::size_t t = 0; t < batch; ++t) {
    starpu_task* task = starpu_task_create();
    task->cl = &cl;
    if (const int ret = starpu_task_submit(task); ret != 0) {
      throw std::runtime_error("starpu_task_submit failed: " + std::to_string(ret));
    }
  }
  starpu_task_wait_for_all();
  return Seconds(Clock::now() - start).count();
}

int starpu_child(const ChildArgs& a) {
  const StarpuConfig& config = starpu_config_named(a.config);
  if (a.overhead) {
    // Empty tasks on 2 workers: wall time per task, median over the repetitions.
    start_starpu(config, 2, a.home);
    starpu_codelet cl;
    starpu_codelet_init(&cl);
    cl.cpu_funcs[0] = empty_task;
    cl.nbuffers = 0;
    cl.name = "ata_peers_empty";
    for (const double b : split_doubles(a.batches)) {
      const auto batch = static_cast<std::size_t>(b);
      const std::size_t per_sample = std::max<std::size_t>(4, 16384 / batch);
      starpu_round(cl, batch);  // warm-up
      std::vector<double> samples;
      for (std::size_t r = 0; r < a.repetitions; ++r) {
        double wall = 0.0;
        for (std::size_t i = 0; i < per_sample; ++i) wall += starpu_round(cl, batch);
        samples.push_back(wall / static_cast<double>(per_sample * batch));
      }
      std::printf("OVERHEAD %zu %.9g\n", batch, median(samples));
    }
    starpu_shutdown();
    return 0;
  }

  const Cluster& cluster = cluster_named(a.cluster);
  const std::size_t n = cluster.means.size();
  ChildState state;
  for (const double m : cluster.means) state.laws.push_back(law_of(a.law, m));
  state.unit = a.unit_ms * 1e-3;
  state.busy.assign(n, 0.0);
  state.tasks.assign(n, 0);
  g_child = &state;

  // One model per cluster and law (each child has a fresh STARPU_HOME anyway).
  const std::string symbol = "ata_peers_" + cluster.name + "_" + a.law;
  starpu_perfmodel model;
  std::memset(&model, 0, sizeof model);
  model.type = STARPU_HISTORY_BASED;
  model.symbol = symbol.c_str();
  starpu_codelet cl;
  starpu_codelet_init(&cl);
  cl.cpu_funcs[0] = sleep_task;
  cl.nbuffers = 0;
  cl.model = &model;
  cl.name = "ata_peers_sleep";

  start_starpu(config, n, a.home);
  const std::vector<double> batches = split_doubles(a.batches);
  if (batches.empty()) throw std::invalid_argument("no batch sizes");

  // Calibration, outside the measured rounds: rounds of the first batch size, on streams of
  // their own, at least kMinRounds, then until every worker has run calibration_tasks tasks
  // (StarPU calls a history entry calibrated after STARPU_CALIBRATE_MINIMUM = 10 samples; while
  // an entry is not, dmda sends that worker tasks to calibrate it), kMaxRounds at most (once
  // calibrated, dmda may rightly starve a slow worker).
  constexpr std::size_t kMinRounds = 5;
  constexpr std::size_t kMaxRounds = 20;
  for (std::size_t i = 0; i < n; ++i) state.rngs.emplace_back(a.seed ^ 0xca1b4a7eULL, i);
  std::size_t calibration_rounds = 0;
  while (calibration_rounds < kMinRounds ||
         (calibration_rounds < kMaxRounds &&
          *std::min_element(state.tasks.begin(), state.tasks.end()) < a.calibration_tasks)) {
    starpu_round(cl, static_cast<std::size_t>(batches.front()));
    ++calibration_rounds;
  }
  std::printf("CALIBRATION %zu", calibration_rounds);
  for (const std::size_t t : state.tasks) std::printf(" %zu", t);
  std::printf("\n");

  // The measured rounds, on the streams ata's pool uses.
  state.rngs.clear();
  for (std::size_t i = 0; i < n; ++i) state.rngs.emplace_back(a.seed, i);
  for (const double b : batches) {
    const auto batch = static_cast<std::size_t>(b);
    std::fill(state.tasks.begin(), state.tasks.end(), 0);
    double wall = 0.0;
    double busy = 0.0;
    for (std::size_t k = 0; k < a.rounds; ++k) {
      std::fill(state.busy.begin(), state.busy.end(), 0.0);
      wall += starpu_round(cl, batch);
      for (const double x : state.busy) busy += x;
    }
    std::printf("RESULT %zu %.9g %.9g", batch, wall, busy);
    for (const std::size_t t : state.tasks) std::printf(" %zu", t);
    std::printf("\n");
    std::fflush(stdout);
  }
  // What the model predicts for each worker at the end, in microseconds (NaN: uncalibrated).
  starpu_task* probe = starpu_task_create();
  probe->cl = &cl;
  probe->destroy = 0;
  std::printf("PREDICTED");
  for (std::size_t w = 0; w < n; ++w) {
    starpu_perfmodel_arch* arch = starpu_worker_get_perf_archtype(static_cast<int>(w), 0);
    std::printf(" %.6g", starpu_task_expected_length(probe, arch, 0));
  }
  std::printf("\n");
  starpu_task_destroy(probe);
  starpu_shutdown();
  return 0;
}

// ---------------------------------------------------------------------------------------
// The parent: children, ata's runs, tables.

struct Config {
  std::string mode = "all";
  std::string clusters = "spread4,onefast4";
  std::string batches = "16,64";
  std::string law = "exponential";
  std::string starpu = "eager,lws,heteroprio,dmda,dmda-core,dmda-core-nofilter";
  std::string strategies = "ofta,ata-auto,ata-e,uta,gta,pull";
  std::size_t rounds = 100;
  std::size_t calibration_tasks = 10;
  std::size_t repetitions = 15;
  double unit_ms = 0.25;
  std::uint64_t seed = 1;
  bool keep_home = false;
  bool starpu_messages = false;
};

// Runs this program again with `args`; returns what it printed on stdout (its stderr is ours).
std::string run_child(const std::vector<std::string>& args) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  posix_spawn_file_actions_addclose(&actions, fds[1]);
  std::vector<std::string> argv_storage{"/proc/self/exe"};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& arg : argv_storage) argv.push_back(arg.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (spawned != 0) {
    close(fds[0]);
    throw std::runtime_error(std::string("posix_spawn: ") + std::strerror(spawned));
  }
  std::string out;
  char buffer[4096];
  for (ssize_t got; (got = read(fds[0], buffer, sizeof buffer)) != 0;) {
    if (got < 0) {
      if (errno == EINTR) continue;
      break;
    }
    out.append(buffer, static_cast<std::size_t>(got));
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw std::runtime_error("child " + args.front() + " " + args.at(1) + " failed (status " +
                             std::to_string(status) + ")");
  }
  return out;
}

struct Result {
  std::string name;
  double wall = 0.0;  // seconds, summed over the rounds
  double busy = 0.0;
  std::vector<std::size_t> tasks;  // accepted per worker, over the rounds
  double nominal = 0.0;            // seconds: the mean times of every task that ran, summed
  bool ok = true;
  std::string note;
};

struct ClusterResults {
  std::vector<std::vector<Result>> by_batch;  // [batch][row]
  std::vector<std::string> notes;
};

std::vector<std::size_t> parse_sizes(std::istringstream& in) {
  std::vector<std::size_t> v;
  for (std::size_t x; in >> x;) v.push_back(x);
  return v;
}

std::vector<std::unique_ptr<ata::Policy>> make_policies(const Config& c, const Cluster& cluster,
                                                        const std::vector<std::string>& names) {
  ata::PolicyOptions options;
  for (const double m : cluster.means) options.means.push_back(m * c.unit_ms * 1e-3);
  options.alpha = *std::max_element(options.means.begin(), options.means.end());
  options.eta = 1.0;
  options.seed = c.seed;
  std::vector<std::unique_ptr<ata::Policy>> policies;
  for (const auto& name : names) {
    policies.push_back(ata::make_policy(name, cluster.means.size(), options));
  }
  return policies;
}

// ata's strategies, each on a pool of its own, round k of each before round k + 1 of any (the
// machine's load drifts; interleaving lets it fall on every strategy alike).
std::vector<Result> run_ata(const Config& c, const Cluster& cluster, std::size_t batch,
                            const std::vector<std::string>& names) {
  const std::size_t n = cluster.means.size();
  const auto unit = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::duration<double, std::milli>(c.unit_ms));
  ata::runtime::PoolOptions options(n);
  for (std::size_t i = 0; i < n; ++i) {
    options.set_slowdown(i, ata::runtime::Slowdown::sleep(law_of(c.law, cluster.means[i]), unit));
  }
  options.set_seed(c.seed);
  auto policies = make_policies(c, cluster, names);
  std::vector<std::unique_ptr<ata::runtime::WorkerPool>> pools;
  std::vector<std::unique_ptr<ata::runtime::BatchScheduler>> schedulers;
  std::vector<Result> results(names.size());
  std::vector<double> nominal;  // each worker's mean task time, seconds
  for (const double m : cluster.means) nominal.push_back(m * c.unit_ms * 1e-3);
  for (std::size_t s = 0; s < names.size(); ++s) {
    pools.push_back(std::make_unique<ata::runtime::WorkerPool>(options));
    schedulers.push_back(
        std::make_unique<ata::runtime::BatchScheduler>(*pools.back(), *policies[s]));
    results[s].name = "ata " + names[s];
    results[s].tasks.assign(n, 0);
  }
  for (std::size_t k = 0; k < c.rounds; ++k) {
    for (std::size_t s = 0; s < names.size(); ++s) {
      const auto report = schedulers[s]->run(batch, [](const ata::runtime::TaskContext&) {}).report;
      results[s].wall += Seconds(report.wall).count();
      results[s].busy += Seconds(report.worker_time()).count();
      for (std::size_t i = 0; i < n; ++i) results[s].tasks[i] += report.allocation[i];
      for (const auto& record : report.tasks) results[s].nominal += nominal[record.worker];
    }
  }
  return results;
}

std::string format_shares(const std::vector<std::size_t>& tasks) {
  std::size_t total = 0;
  for (const std::size_t t : tasks) total += t;
  std::string out;
  char cell[16];
  for (const std::size_t t : tasks) {
    std::snprintf(cell, sizeof cell, "%s%.0f", out.empty() ? "" : " ",
                  total == 0 ? 0.0 : 100.0 * static_cast<double>(t) / static_cast<double>(total));
    out += cell;
  }
  return out;
}

void print_table(const Config& c, const Cluster& cluster, const std::vector<std::size_t>& batches,
                 const ClusterResults& r) {
  std::string means;
  for (const double m : cluster.means)
    means += (means.empty() ? "" : ",") + std::to_string(static_cast<int>(m));
  std::printf("\n== %s: n = %zu, %s times, means %s x %g ms, K = %zu rounds, seed %llu ==\n",
              cluster.name.c_str(), cluster.means.size(), c.law.c_str(), means.c_str(), c.unit_ms,
              c.rounds, static_cast<unsigned long long>(c.seed));
  std::printf(
      "per round: makespan (wall) and busy worker time, ms, and each / ata ofta; stretch = busy "
      "/ the mean times of the tasks that ran (sleeps overrun by the machine)\n");
  std::printf("%-26s", "");
  for (const std::size_t b : batches) std::printf(" | %-39s", ("B = " + std::to_string(b)).c_str());
  std::printf(" | tasks per worker (%%), B = %zu\n", batches.back());
  std::printf("%-26s", "");
  for (std::size_t i = 0; i < batches.size(); ++i) {
    std::printf(" | %7s %6s %8s %6s %7s", "wall", "/ofta", "busy", "/ofta", "stretch");
  }
  std::printf(" |\n");
  const std::size_t rows = r.by_batch.front().size();
  for (std::size_t row = 0; row < rows; ++row) {
    std::printf("%-26s", r.by_batch.front()[row].name.c_str());
    for (std::size_t bi = 0; bi < batches.size(); ++bi) {
      const Result& x = r.by_batch[bi][row];
      const Result& ref = r.by_batch[bi].front();
      if (!x.ok) {
        std::printf(" | %-39s", x.note.c_str());
        continue;
      }
      const double k = static_cast<double>(c.rounds);
      std::printf(" | %7.2f %6.2f %8.2f %6.2f %7.2f", 1e3 * x.wall / k, x.wall / ref.wall,
                  1e3 * x.busy / k, x.busy / ref.busy, x.nominal > 0.0 ? x.busy / x.nominal : 0.0);
    }
    const Result& last = r.by_batch.back()[row];
    std::printf(" | %s\n", last.ok ? format_shares(last.tasks).c_str() : "");
  }
  for (const auto& note : r.notes) std::printf("%s\n", note.c_str());
  std::fflush(stdout);
}

void describe_starpu(const Config& c, const std::string& home) {
  std::printf("StarPU %d.%d.%d, each configuration in a child process of its own with\n",
              STARPU_MAJOR_VERSION, STARPU_MINOR_VERSION, STARPU_RELEASE_VERSION);
  std::printf("  ");
  for (const auto& [key, value] : common_env(4, home + "/<config>-<cluster>")) {
    std::printf("%s=%s ", key.c_str(), value.c_str());
  }
  std::printf("(STARPU_NCPU = n)\n");
  for (const auto& name : split(c.starpu, ',')) {
    const StarpuConfig& s = starpu_config_named(name);
    std::printf("  %-20s STARPU_SCHED=%s", s.name.c_str(), s.sched.c_str());
    for (const auto& [key, value] : s.env) std::printf(" %s=%s", key.c_str(), value.c_str());
    if (s.sched == "heteroprio") std::printf(" (one priority, one CPU bucket, set at init)");
    std::printf("\n");
  }
  std::printf(
      "  codelet: sleeps a draw of the law of the worker running it (starpu_worker_get_id()); "
      "perfmodel STARPU_HISTORY_BASED, one per cluster and law\n"
      "  calibration: before the measured rounds, rounds of B = first batch size on other "
      "random streams, at least 5, then until each worker ran %zu tasks (20 rounds at most); "
      "not counted\n"
      "  ata: no calibration, each strategy learns from its first measured round\n",
      c.calibration_tasks);
}

int run_rounds(const Config& c, const std::string& home) {
  const auto names = split(c.strategies, ',');
  if (names.empty() || names.front() != "ofta") {
    throw std::invalid_argument("--strategies must start with ofta (the reference)");
  }
  std::vector<std::size_t> batches;
  for (const double b : split_doubles([&] {
         std::string s = c.batches;
         std::replace(s.begin(), s.end(), ',', ' ');
         return s;
       }())) {
    batches.push_back(static_cast<std::size_t>(b));
  }
  const auto starpu_names = split(c.starpu, ',');
  std::string batch_list;
  for (const std::size_t b : batches)
    batch_list += (batch_list.empty() ? "" : " ") + std::to_string(b);
  describe_starpu(c, home);
  std::vector<std::string> cluster_names = split(c.clusters, ',');
  std::size_t step = 0;
  const std::size_t steps = cluster_names.size() * (starpu_names.size() + batches.size());
  for (const auto& cluster_name : cluster_names) {
    const Cluster& cluster = cluster_named(cluster_name);
    const std::size_t n = cluster.means.size();
    ClusterResults results;
    results.by_batch.resize(batches.size());
    // ata first: its OFTA is the reference row.
    for (std::size_t bi = 0; bi < batches.size(); ++bi) {
      const auto start = Clock::now();
      std::fprintf(stderr, "[%zu/%zu] %s B = %zu: ata's %zu strategies, %zu rounds ...", ++step,
                   steps, cluster.name.c_str(), batches[bi], names.size(), c.rounds);
      results.by_batch[bi] = run_ata(c, cluster, batches[bi], names);
      std::fprintf(stderr, " %.1f s\n", Seconds(Clock::now() - start).count());
    }
    for (const auto& config : starpu_names) {
      ++step;
      std::vector<Result> rows(batches.size());
      for (auto& row : rows) row.name = "starpu " + config;
      if (n > STARPU_MAXCPUS) {
        for (auto& row : rows) {
          row.ok = false;
          row.note = "n > STARPU_MAXCPUS = " + std::to_string(STARPU_MAXCPUS);
        }
      } else {
        const auto start = Clock::now();
        std::fprintf(stderr, "[%zu/%zu] %s: StarPU %s (child process), B = %s ...", step, steps,
                     cluster.name.c_str(), config.c_str(), batch_list.c_str());
        const std::string child_home = home + "/" + config + "-" + cluster.name;
        std::filesystem::create_directories(child_home);
        std::vector<std::string> args{"--starpu-child",
                                      config,
                                      "--cluster",
                                      cluster.name,
                                      "--law",
                                      c.law,
                                      "--batches",
                                      batch_list,
                                      "--rounds",
                                      std::to_string(c.rounds),
                                      "--calibration-tasks",
                                      std::to_string(c.calibration_tasks),
                                      "--unit-ms",
                                      std::to_string(c.unit_ms),
                                      "--seed",
                                      std::to_string(c.seed),
                                      "--home",
                                      child_home};
        try {
          std::istringstream out(run_child(args));
          std::size_t bi = 0;
          for (std::string line; std::getline(out, line);) {
            std::istringstream fields(line);
            std::string tag;
            fields >> tag;
            if (tag == "RESULT" && bi < rows.size()) {
              std::size_t batch = 0;
              fields >> batch >> rows[bi].wall >> rows[bi].busy;
              rows[bi].tasks = parse_sizes(fields);
              for (std::size_t i = 0; i < rows[bi].tasks.size() && i < n; ++i) {
                rows[bi].nominal +=
                    static_cast<double>(rows[bi].tasks[i]) * cluster.means[i] * c.unit_ms * 1e-3;
              }
              ++bi;
            } else if (tag == "CALIBRATION") {
              std::size_t rounds = 0;
              fields >> rounds;
              const auto tasks = parse_sizes(fields);
              std::string t;
              for (const auto x : tasks) t += " " + std::to_string(x);
              results.notes.push_back("  starpu " + config + ": calibration " +
                                      std::to_string(rounds) + " rounds, tasks per worker" + t);
            } else if (tag == "PREDICTED" && config.rfind("dmda", 0) == 0) {
              std::string p;
              for (std::string us; fields >> us;) {
                // NaN: the entry holds fewer than STARPU_CALIBRATE_MINIMUM samples (flushed).
                const double v = std::strtod(us.c_str(), nullptr);
                char cell[24];
                std::snprintf(cell, sizeof cell, std::isnan(v) ? " none" : " %.2f", v * 1e-3);
                p += cell;
              }
              results.notes.back() += "; model's final prediction per worker (ms):" + p;
            }
          }
          if (bi != rows.size()) throw std::runtime_error("child printed too few results");
          std::fprintf(stderr, " %.1f s\n", Seconds(Clock::now() - start).count());
        } catch (const std::exception& e) {
          std::fprintf(stderr, " failed: %s\n", e.what());
          for (auto& row : rows) {
            row.ok = false;
            row.note = "failed";
          }
        }
      }
      for (std::size_t bi = 0; bi < batches.size(); ++bi) results.by_batch[bi].push_back(rows[bi]);
    }
    print_table(c, cluster, batches, results);
  }
  return 0;
}

// Empty tasks on 2 threads: wall time per task, median of the repetitions, peers interleaved.
int run_overhead(const Config& c, const std::string& home) {
  constexpr std::size_t kThreads = 2;
  const std::vector<std::size_t> batches{64, 1024};
  std::printf("\n== per-task overhead: empty tasks, %zu threads, median of %zu samples ==\n",
              kThreads, c.repetitions);
  tbb::global_control tbb_threads(tbb::global_control::max_allowed_parallelism, kThreads);
  ata::runtime::WorkerPool pool_uta(kThreads);
  ata::runtime::WorkerPool pool_pull(kThreads);
  auto uta = ata::make_policy("uta", kThreads);
  auto pull = ata::make_policy("pull", kThreads);
  ata::runtime::BatchScheduler sched_uta(pool_uta, *uta);
  ata::runtime::BatchScheduler sched_pull(pool_pull, *pull);
  boost::asio::thread_pool asio_pool(kThreads);
#ifdef ATA_PEERS_HAVE_THREAD_POOL
  thread_pool::ThreadPool rvaser_pool(kThreads);
#endif
  std::atomic<std::size_t> sink = 0;
  auto touch = [&sink](std::size_t t) {
    if (t == 0) sink.fetch_add(1, std::memory_order_relaxed);
  };
  using Batch = std::function<void(std::size_t)>;
  std::vector<std::pair<std::string, Batch>> peers{
      {"ata uta (allocated)",
       [&](std::size_t b) {
         sched_uta.run(b, [&](const ata::runtime::TaskContext& ctx) { touch(ctx.task()); });
       }},
      {"ata pull",
       [&](std::size_t b) {
         sched_pull.run(b, [&](const ata::runtime::TaskContext& ctx) { touch(ctx.task()); });
       }},
      {"tbb::task_group",
       [&](std::size_t b) {
         tbb::task_group group;
         for (std::size_t t = 0; t < b; ++t) group.run([&touch, t] { touch(t); });
         group.wait();
       }},
      {"boost::asio::thread_pool",
       [&](std::size_t b) {
         std::latch done(static_cast<std::ptrdiff_t>(b));
         for (std::size_t t = 0; t < b; ++t) {
           boost::asio::post(asio_pool, [&done, &touch, t] {
             touch(t);
             done.count_down();
           });
         }
         done.wait();
       }},
#ifdef ATA_PEERS_HAVE_THREAD_POOL
      {"thread_pool (rvaser, Debian)",
       [&](std::size_t b) {
         std::vector<std::future<void>> futures;
         futures.reserve(b);
         for (std::size_t t = 0; t < b; ++t)
           futures.push_back(rvaser_pool.Submit([&touch, t] { touch(t); }));
         for (auto& f : futures) f.get();
       }},
#endif
  };
  // [batch][peer] samples
  std::vector<std::vector<std::vector<double>>> samples(
      batches.size(), std::vector<std::vector<double>>(peers.size()));
  for (std::size_t bi = 0; bi < batches.size(); ++bi) {
    const std::size_t b = batches[bi];
    const std::size_t per_sample = std::max<std::size_t>(4, 16384 / b);
    for (auto& peer : peers) peer.second(b);  // warm-up
    for (std::size_t r = 0; r < c.repetitions; ++r) {
      for (std::size_t p = 0; p < peers.size(); ++p) {
        const auto start = Clock::now();
        for (std::size_t i = 0; i < per_sample; ++i) peers[p].second(b);
        samples[bi][p].push_back(Seconds(Clock::now() - start).count() /
                                 static_cast<double>(per_sample * b));
      }
    }
  }
  // StarPU eager in a child, after the others (its idle workers spin).
  std::vector<double> starpu(batches.size(), std::nan(""));
  {
    std::fprintf(stderr, "overhead: StarPU eager, empty tasks (child process) ...");
    const std::string child_home = home + "/eager-overhead";
    std::filesystem::create_directories(child_home);
    std::string batch_list;
    for (const std::size_t b : batches)
      batch_list += (batch_list.empty() ? "" : " ") + std::to_string(b);
    try {
      std::istringstream out(
          run_child({"--starpu-child", "eager", "--overhead", "--batches", batch_list,
                     "--repetitions", std::to_string(c.repetitions), "--home", child_home}));
      for (std::string line; std::getline(out, line);) {
        std::istringstream fields(line);
        std::string tag;
        std::size_t b = 0;
        double per_task = 0.0;
        if (fields >> tag >> b >> per_task && tag == "OVERHEAD") {
          for (std::size_t bi = 0; bi < batches.size(); ++bi) {
            if (batches[bi] == b) starpu[bi] = per_task;
          }
        }
      }
      std::fprintf(stderr, " done\n");
    } catch (const std::exception& e) {
      std::fprintf(stderr, " failed: %s\n", e.what());
    }
  }
  std::printf("%-30s", "");
  for (const std::size_t b : batches) std::printf(" | B = %-4zu ns/task  / ata uta", b);
  std::printf("\n");
  std::vector<double> ref(batches.size());
  for (std::size_t bi = 0; bi < batches.size(); ++bi) ref[bi] = median(samples[bi][0]);
  for (std::size_t p = 0; p < peers.size(); ++p) {
    std::printf("%-30s", peers[p].first.c_str());
    for (std::size_t bi = 0; bi < batches.size(); ++bi) {
      const double m = median(samples[bi][p]);
      std::printf(" | %16.0f %9.2f", 1e9 * m, m / ref[bi]);
    }
    std::printf("\n");
  }
  std::printf("%-30s", "starpu eager (own process)");
  for (std::size_t bi = 0; bi < batches.size(); ++bi) {
    std::printf(" | %16.0f %9.2f", 1e9 * starpu[bi], starpu[bi] / ref[bi]);
  }
  std::printf("\n");
#ifndef ATA_PEERS_HAVE_THREAD_POOL
  std::printf("(thread_pool: libthread-pool-dev was not found at configure time)\n");
#endif
  asio_pool.join();
  std::fflush(stdout);
  return sink.load() == 0 ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Sleeps end within ~1 us of their deadline, not the default 50 us timer slack; the threads
  // the pools and StarPU start inherit it.
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);

  Config c;
  ChildArgs child;
  std::string child_config;
  CLI::App app{
      "ata_bench_peers: ata against StarPU's schedulers on the same heterogeneous "
      "sleeping workers, and per-task overhead against oneTBB, Asio, thread_pool"};
  app.add_option("--mode", c.mode, "rounds, overhead or all")
      ->check(CLI::IsMember({"rounds", "overhead", "all"}));
  app.add_option("--clusters", c.clusters, "comma-separated: spread4, onefast4, spread, onefast");
  app.add_option("--batches", c.batches, "comma-separated batch sizes B");
  app.add_option("--law", c.law, "law of each task time")
      ->check(CLI::IsMember({"exponential", "constant"}));
  app.add_option("--rounds", c.rounds, "measured rounds K per (strategy, B)")
      ->check(CLI::PositiveNumber);
  app.add_option("--unit-ms", c.unit_ms, "milliseconds per model unit")->check(CLI::PositiveNumber);
  app.add_option("--seed", c.seed, "run seed");
  app.add_option("--starpu", c.starpu,
                 "StarPU configurations: eager, lws, heteroprio, dmda, dmda-core, "
                 "dmda-core-nofilter");
  app.add_option("--strategies", c.strategies, "ata's strategies, ofta first");
  app.add_option("--calibration-tasks", c.calibration_tasks,
                 "StarPU calibration: tasks each worker runs before the measured rounds");
  app.add_option("--repetitions", c.repetitions, "overhead mode: samples per peer")
      ->check(CLI::PositiveNumber);
  app.add_flag("--starpu-messages", c.starpu_messages,
               "let StarPU print its warnings (model flushes) on stderr");
  app.add_flag("--keep-models", c.keep_home,
               "keep StarPU's model files (STARPU_HOME) after the run");
  // The child's own options.
  app.add_option("--starpu-child", child_config)->group("");
  app.add_option("--cluster", child.cluster)->group("");
  app.add_option("--home", child.home)->group("");
  app.add_flag("--overhead", child.overhead)->group("");
  CLI11_PARSE(app, argc, argv);

  try {
    if (!child_config.empty()) {
      child.config = child_config;
      child.law = c.law;
      child.batches = c.batches;
      std::replace(child.batches.begin(), child.batches.end(), ',', ' ');
      child.rounds = c.rounds;
      child.calibration_tasks = c.calibration_tasks;
      child.unit_ms = c.unit_ms;
      child.seed = c.seed;
      child.repetitions = c.repetitions;
      return starpu_child(child);
    }
    const auto start = Clock::now();
    if (c.starpu_messages) setenv("ATA_PEERS_STARPU_MESSAGES", "1", 1);  // the children see it
    std::string templ = (std::filesystem::temp_directory_path() / "ata_peers.XXXXXX").string();
    if (mkdtemp(templ.data()) == nullptr) {
      throw std::runtime_error(std::string("mkdtemp: ") + std::strerror(errno));
    }
    const std::string home = templ;
    std::printf("%u hardware threads, load average %s at the start\n",
                std::thread::hardware_concurrency(), load_average().c_str());
    std::printf("StarPU writes its models and bus files under %s (%s)\n", home.c_str(),
                c.keep_home ? "kept" : "removed at the end; --keep-models keeps them");
    int rc = 0;
    if (c.mode != "overhead") rc |= run_rounds(c, home);
    if (c.mode != "rounds") rc |= run_overhead(c, home);
    if (!c.keep_home) std::filesystem::remove_all(home);
    std::printf("\ntotal %.1f s, load average %s at the end; nothing else written\n",
                Seconds(Clock::now() - start).count(), load_average().c_str());
    return rc;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ata_bench_peers: %s\n", e.what());
    return 1;
  }
}

// ata-mpi-sgd: ata-sgd over MPI ranks. Rank 0 runs each strategy's policy and the SGD steps;
// every other rank is one worker, slowed down as thread worker rank - 1 of ata-sgd would be.
// Same flags, table, JSON, CSV and plots as ata-sgd; the number of workers is mpirun's -n - 1.
//
//   mpirun -n 8 --oversubscribe ata-mpi-sgd --scenario sqrt --rounds 300
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "app_support.hpp"
#include "ata/core/error.hpp"
#include "ata/core/make_policy.hpp"
#include "ata/mpi/rank_scheduler.hpp"
#include "ata/runtime/trace_recorder.hpp"
#include "training_app.hpp"
#include "training_options.hpp"

namespace {

constexpr const char* kProgram = "ata-mpi-sgd";
constexpr const char* kDescription =
    "ata-mpi-sgd: minibatch SGD over MPI ranks with heterogeneous workers, strategy by strategy";
constexpr const char* kGradient = "gradient";

using namespace ata;

std::size_t worker_ranks() {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return static_cast<std::size_t>(size - 1);
}

// The command line as every rank reads it: the worker count is the ranks'. Returns nothing for
// --help.
std::optional<ml::TrainingOptions> options(int argc, char** argv) {
  auto command_line = ml::parse_training_options(argc, argv, ml::Method::sgd, kDescription);
  if (command_line.help) return std::nullopt;
  auto o = command_line.options;
  const std::size_t ranks = worker_ranks();
  if (o.workers != 0 && o.workers != ranks) {
    throw apps::UsageError("--workers: " + std::to_string(o.workers) + ", but mpirun started " +
                           std::to_string(ranks) + " worker ranks (-n " +
                           std::to_string(ranks + 1) + "); leave --workers out");
  }
  if (o.lanes != ml::LaneKind::threads || !o.cpus.empty() || !o.work_factors.empty() ||
      o.scenario == ml::kNoScenario || o.calibration_tasks != 0) {
    throw apps::UsageError(
        "--lanes, --cpus, --work-factors, --calibration-tasks and --scenario none do not apply "
        "to MPI ranks: each rank is one worker, slowed by the scenario");
  }
  if (o.delay_threshold > 0) {
    throw apps::UsageError("--strategies: the ringmaster strategies run on threads only (ata-sgd, "
                           "ata-prox), not on MPI ranks");
  }
  o.workers = ranks;
  return o;
}

void check_cluster(const ml::TrainingConfig& config) {
  if (config.scenario.workers() != worker_ranks()) {
    throw InvalidArgument(
        "scenario " + config.scenario.name() + " has " + std::to_string(config.scenario.workers()) +
        " workers, but mpirun started " + std::to_string(worker_ranks()) + " worker ranks");
  }
}

// Workers lost when a strategy ended: the next strategy's scheduler starts without them.
std::vector<std::size_t> g_lost_workers;

ml::TrainingRun train_on_ranks(const ml::Problem& problem, const ml::TrainingConfig& config,
                               std::string_view strategy,
                               const std::function<void(std::size_t)>& progress) {
  PolicyOptions policy_options = config.policy;
  policy_options.means = ml::true_means_seconds(config);
  policy_options.seed = config.seed;
  const auto policy = make_policy(strategy, worker_ranks(), policy_options);
  mpi::RankOptions rank_options;
  rank_options.lost_workers = g_lost_workers;
  rank_options.backups = config.backups;
  mpi::RankScheduler root(MPI_COMM_WORLD, *policy, rank_options);
  runtime::TraceRecorder recorder(config.traced_rounds, config.traced_rounds);
  if (config.traced_rounds > 0) root.set_observer(&recorder);

  ml::TrainingRun run;
  run.name = std::string(strategy);
  std::vector<double> x = problem.initial_point();
  const double target = config.target_gap * (problem.loss(x) - problem.optimal_loss());
  const std::size_t d = problem.dim();
  double overhead = 0.0;
  double root_cpu = 0.0;
  std::vector<double> mean(d);
  for (std::size_t k = 1; k <= config.max_rounds; ++k) {
    const auto batch = root.run(config.batch, kGradient, mpi::to_bytes(x));
    for (const auto& e : batch.events) {
      std::fprintf(stderr, "%s: %s: rank %zu %s in round %zu, %.2f s after the start\n", kProgram,
                   run.name.c_str(), e.rank,
                   e.kind == mpi::RankEvent::Kind::lost        ? "lost (overdue)"
                   : e.kind == mpi::RankEvent::Kind::slow_link ? "on a slow link"
                                                                : "back",
                   e.round, e.seconds);
    }
    std::fill(mean.begin(), mean.end(), 0.0);
    for (const auto& r : batch.results) {
      const auto g = mpi::read_doubles(r);
      if (g.size() != d) throw Error("a worker rank returned a gradient of the wrong size");
      for (std::size_t j = 0; j < d; ++j) mean[j] += g[j];
    }
    const double inv = 1.0 / static_cast<double>(batch.results.size());
    for (std::size_t j = 0; j < d; ++j) x[j] -= config.step * mean[j] * inv;
    const auto seconds = [](std::chrono::nanoseconds t) {
      return std::chrono::duration<double>(t).count();
    };
    run.wall_seconds += seconds(batch.report.wall);
    root_cpu += seconds(batch.root_cpu);
    run.worker_seconds += seconds(batch.report.worker_time());
    overhead += seconds(batch.report.overhead());
    run.rounds = k;
    run.final_gap = problem.loss(x) - problem.optimal_loss();
    if (!std::isfinite(run.final_gap)) {
      throw Error(run.name + " diverged at round " + std::to_string(k) + " (lower --step)");
    }
    run.trace.push_back({k, run.wall_seconds, run.worker_seconds, run.final_gap});
    if (progress) progress(k);
    if (run.final_gap <= target) {
      run.reached = true;
      break;
    }
  }
  // What the root cost and what it learned of the links, for runs across a network.
  if (run.rounds > 0) {
    std::fprintf(stderr,
                 "%s: %s: root CPU %.0f us per round, %.2f%% of its mean round of %.2f ms "
                 "(doorbells of %zu of %zu ranks); learned round trips (ms), rank 1 on:",
                 kProgram, run.name.c_str(), 1e6 * root_cpu / static_cast<double>(run.rounds),
                 100.0 * root_cpu / run.wall_seconds,
                 1e3 * run.wall_seconds / static_cast<double>(run.rounds),
                 root.doorbells_connected(), root.workers());
    for (std::size_t w = 0; w < root.workers(); ++w) {
      const auto rtt = root.round_trip(w);
      if (rtt) {
        std::fprintf(stderr, " %.2f", 1e3 * *rtt);
      } else {
        std::fprintf(stderr, " -");
      }
    }
    std::fprintf(stderr, "\n");
  }
  g_lost_workers.clear();
  for (std::size_t w = 0; w < root.workers(); ++w) {
    if (root.lost(w)) g_lost_workers.push_back(w);
  }
  run.overhead_share = run.wall_seconds > 0.0 ? overhead / run.wall_seconds : 0.0;
  run.traced = recorder.batches();
  return run;
}

int root_main(int argc, char** argv) {
  const int code = apps::run_reporting_errors(kProgram, [&] {
    // --help needs no worker ranks.
    if (const auto help =
            ml::parse_training_options(argc, argv, ml::Method::sgd, kDescription).help) {
      std::fputs(help->c_str(), stdout);
      std::puts("\nOver MPI: one worker per rank beyond rank 0 (--workers is mpirun's -n - 1).");
      return 0;
    }
    if (worker_ranks() == 0) {
      throw InvalidArgument("needs at least 2 MPI ranks, e.g. mpirun -n 8 --oversubscribe " +
                            std::string(kProgram));
    }
    const auto o = options(argc, argv).value();  // engaged: --help was answered above
    check_cluster(ml::make_training_config(o, ml::Method::sgd));
    return ml::run_training(o, ml::Method::sgd, kProgram, train_on_ranks, "worker ranks");
  });
  if (worker_ranks() > 0) {
    const auto uniform = make_policy("uta", worker_ranks());
    mpi::RankOptions rank_options;
    rank_options.lost_workers = g_lost_workers;
    const bool lost = mpi::RankScheduler(MPI_COMM_WORLD, *uniform, rank_options).shutdown();
    mpi::finish(lost, code);
  } else {
    mpi::finish(false);
  }
  return code;
}

// A worker rank builds the same problem from the same command line, then serves gradients.
// When the command line is bad, rank 0 says so; the workers wait for its shutdown.
int worker_main(int argc, char** argv) {
  mpi::TaskRegistry tasks;
  std::unique_ptr<ml::Problem> problem;
  std::optional<ml::TrainingConfig> config;
  try {
    if (const auto o = options(argc, argv)) {
      config = ml::make_training_config(*o, ml::Method::sgd);
      check_cluster(*config);
      problem = ml::make_training_problem(*o, kProgram);
    }
  } catch (const std::exception&) {
    config.reset();
  }
  if (!config) {
    runtime::LaneOptions idle(worker_ranks());
    mpi::finish(mpi::serve_tasks(MPI_COMM_WORLD, tasks, idle));
    return 0;
  }
  const std::uint64_t seed = config->seed;
  tasks.add(kGradient, [&](const mpi::TaskInput& in) {
    // Task j of round k draws as on threads: models::Rng(seed + k, j).
    const auto x = mpi::read_doubles(in.input);
    models::Rng rng(seed + in.round, in.task);
    std::vector<double> g(problem->dim());
    problem->stochastic_gradient(x, rng, g);
    return mpi::to_bytes(g);
  });
  auto pool = runtime::LaneOptions::from_scenario(
      config->scenario, config->unit,
      config->burn ? runtime::Slowdown::Kind::burn : runtime::Slowdown::Kind::sleep);
  pool.set_seed(config->seed);
  mpi::finish(mpi::serve_tasks(MPI_COMM_WORLD, tasks, pool));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank == 0 ? root_main(argc, argv) : worker_main(argc, argv);
}

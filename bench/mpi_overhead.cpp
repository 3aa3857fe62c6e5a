// The rank back-end's cost per round against the thread runtime's, on the same preset, side by
// side in one run (docs/mpi.md):
//
//   mpirun -n 8 --oversubscribe ata_bench_mpi [rounds=400] [preset=linear] [unit_us=20] [B=23]
//
// Rank 0 alternates blocks of rounds on a WorkerPool of n - 1 threads and on the n - 1 worker
// ranks (ATA, the same slowdowns and seed), and prints the mean overhead per round (wall time
// minus the busiest worker's busy time), the root's CPU time per round on ranks, and the time
// of the policy's allocate() alone for larger n (what a root of hundreds of ranks adds).
#include <mpi.h>
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "ata/core/ata_policy.hpp"
#include "ata/models/scenario.hpp"
#include "ata/mpi/rank_scheduler.hpp"
#include "ata/runtime/batch_scheduler.hpp"
#include "ata/runtime/worker_pool.hpp"

namespace {

double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

double seconds(std::chrono::nanoseconds t) { return std::chrono::duration<double>(t).count(); }

ata::runtime::LaneOptions cluster(std::size_t workers, const std::string& preset, double unit_us) {
  auto options = ata::runtime::LaneOptions::from_scenario(
      ata::models::make_preset(preset, workers),
      std::chrono::nanoseconds(static_cast<long long>(unit_us * 1000.0)));
  options.set_seed(11);
  return options;
}

// observe() + allocate() of ATA for n workers: the root's policy work per round.
double allocate_seconds(std::size_t n, std::size_t batch) {
  // Means 1..7 ms, alpha the largest, 100 observations each: every lower bound is positive,
  // so the solver does its full work.
  ata::AtaPolicy policy(n, 7e-3);
  for (std::size_t w = 0; w < n; ++w) {
    for (int k = 0; k < 100; ++k) {
      policy.observe(w, 1e-3 * (1.0 + static_cast<double>(w % 7)) * (0.5 + 0.01 * k));
    }
  }
  const int reps = 200;
  ata::Allocation a;
  const auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < reps; ++r) {
    // A new observation each round, as in a run, so nothing is reused from the last solve.
    policy.observe(static_cast<std::size_t>(r) % n, 1e-3 * (1.0 + 0.01 * r));
    policy.allocate(batch, a);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / reps;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 400;
  const std::string preset = argc > 2 ? argv[2] : "linear";
  const double unit_us = argc > 3 ? std::atof(argv[3]) : 20.0;
  const std::size_t batch = argc > 4 ? static_cast<std::size_t>(std::atoi(argv[4])) : 23;
  if (size < 2 || rounds < 10 || unit_us <= 0.0 || batch == 0) {
    if (rank == 0)
      std::fprintf(stderr,
                   "usage: mpirun -n N ata_bench_mpi [rounds>=10] [preset] [unit_us>0] [B>0]\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const auto workers = static_cast<std::size_t>(size - 1);
  const auto options = cluster(workers, preset, unit_us);
  if (rank != 0) {
    ata::mpi::TaskRegistry tasks;
    tasks.add("noop", [](const ata::mpi::TaskInput&) { return ata::mpi::Bytes{}; });
    ata::mpi::finish(ata::mpi::serve_tasks(MPI_COMM_WORLD, tasks, options));
    return 0;
  }
  const double alpha = 58.0 * static_cast<double>(workers) * unit_us * 1e-6;
  ata::AtaPolicy on_threads(workers, alpha);
  ata::AtaPolicy on_ranks(workers, alpha);
  ata::runtime::WorkerPool pool{ata::runtime::PoolOptions(options)};
  ata::runtime::BatchScheduler threads(pool, on_threads);
  ata::mpi::RankScheduler root(MPI_COMM_WORLD, on_ranks);

  double thread_overhead = 0.0, thread_wall = 0.0, rank_overhead = 0.0, rank_wall = 0.0;
  double rank_cpu = 0.0;
  std::size_t late = 0, lost = 0;
  const int blocks = 10;
  for (int b = 0; b < blocks; ++b) {
    for (int k = 0; k < rounds / blocks; ++k) {
      const auto [values, report] = threads.run(batch, [](const auto&) { return 0; });
      thread_overhead += seconds(report.overhead());
      thread_wall += seconds(report.wall);
    }
    for (int k = 0; k < rounds / blocks; ++k) {
      const double cpu = cpu_seconds();
      const auto r = root.run(batch, "noop", {});
      rank_cpu += cpu_seconds() - cpu;
      rank_overhead += seconds(r.report.overhead());
      rank_wall += seconds(r.report.wall);
      late += r.late_answers;
      lost += r.events.size();
    }
  }
  const double per = 1.0 / (blocks * (rounds / blocks));
  std::printf("n = %zu workers (%d ranks), preset %s, unit %g us, B = %zu, %d rounds each\n",
              workers, size, preset.c_str(), unit_us, batch, blocks * (rounds / blocks));
  std::printf("  threads: wall %.3f ms/round, overhead %.1f us/round\n", 1e3 * thread_wall * per,
              1e6 * thread_overhead * per);
  std::printf(
      "  ranks:   wall %.3f ms/round, overhead %.1f us/round (%.2f x threads), root CPU %.1f "
      "us/round\n",
      1e3 * rank_wall * per, 1e6 * rank_overhead * per, rank_overhead / thread_overhead,
      1e6 * rank_cpu * per);
  std::printf("  ranks lost or back: %zu, late answers: %zu\n", lost, late);
  for (const std::size_t n : {8u, 64u, 512u}) {
    std::printf("  ATA observe + allocate(B = %zu), n = %zu: %.1f us\n", batch, n,
                1e6 * allocate_seconds(n, batch));
  }
  for (const std::size_t n : {512u}) {
    std::printf("  ATA observe + allocate(B = %zu), n = %zu: %.1f us\n", 4 * n, n,
                1e6 * allocate_seconds(n, 4 * n));
  }
  ata::mpi::finish(root.shutdown());
  return 0;
}

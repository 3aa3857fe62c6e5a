// Plans of your own: race the fastest workers, hedge, restart, in virtual time and on threads.
//   ./build/examples/ata_plans
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "ata/ata.hpp"

int main() {
  // Virtual time: the paper's cifar cluster, racing its 6 fastest workers (Rennala SGD on a
  // subset) against OFTA's quotas.
  const auto cluster = ata::models::make_preset("cifar", 51);
  ata::FixedPlanPolicy race6("race:6", ata::race_of_fastest(cluster.means(), 6));
  ata::OraclePolicy ofta(cluster.means());
  for (ata::Policy* policy : std::vector<ata::Policy*>{&ofta, &race6}) {
    ata::sim::Simulation sim(cluster, *policy, /*batch=*/23, /*seed=*/1);
    double wall = 0.0;
    double work = 0.0;
    for (int k = 0; k < 2000; ++k) {
      const auto r = sim.run_round();
      wall += r.wall_time;
      work += r.worker_time;
    }
    std::printf("%-7s wall %.4g  worker time %.4g (model units)\n",
                std::string(policy->name()).c_str(), wall, work);
  }

  // Threads: quotas {3, 1} with a restart budget of 20 ms on worker 0, whose first attempt at
  // each task hangs until it is stopped; the restarted copy returns at once.
  ata::runtime::WorkerPool pool(2);
  ata::Plan plan = ata::Plan::quotas(ata::Allocation(std::vector<std::size_t>{3, 1}));
  plan.set_restart_after(0, 0.020);
  ata::FixedPlanPolicy restarting("restarting", plan);
  ata::runtime::BatchScheduler scheduler(pool, restarting);
  std::vector<std::atomic<int>> attempts(4);
  const auto [values, report] = scheduler.run(4, [&](const ata::runtime::TaskContext& ctx) {
    if (ctx.worker() == 0 && attempts[ctx.task()].fetch_add(1) == 0) {
      while (!ctx.stop_requested()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return ctx.task();
  });
  std::printf("threads: %zu results, %zu restarts, %zu copies discarded\n", values.size(),
              report.restarts, report.discarded());
  return 0;
}

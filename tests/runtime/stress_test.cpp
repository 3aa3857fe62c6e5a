// 8 submitters, batches in all three modes, random task exceptions, tasks that honour stop
// requests, slowdowns, and pools shut down in the middle of it all. Every batch must end in
// its results or a documented exception, every result must be there exactly once, nothing
// may hang, and resident memory must stay flat.
//
// Modest by default (a few seconds; also under ThreadSanitizer). ATA_STRESS=full runs the
// full size, 10^6 tasks in 10^4 batches: scripts/stress does, and prints the figures.
#include <catch2/catch_test_macros.hpp>
#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <memory>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "ata/ata.hpp"
#include "support/without_backups.hpp"

namespace rt = ata::runtime;
using namespace std::chrono_literals;

namespace {

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
// Shadow memory and quarantines grow by design: the memory bound means nothing there.
constexpr bool kMemoryIsMeaningful = false;
#else
constexpr bool kMemoryIsMeaningful = true;
#endif

struct Size {
  std::size_t batches;
  std::size_t mean_batch;  // B is uniform in [1, 2 * mean_batch - 1]
  std::size_t epochs;      // pools built; all but the last are shut down mid-run
};

Size stress_size() {
  const char* mode = std::getenv("ATA_STRESS");
  if (mode != nullptr && std::string(mode) == "full") return {10'000, 100, 40};
  return {2000, 50, 8};
}

// Resident memory of this process, from /proc/self/statm (its second field, in pages).
std::size_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::size_t size = 0;
  std::size_t resident = 0;
  statm >> size >> resident;
  return resident * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

// What a task throws, on purpose.
struct InjectedFault : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// One pool with four unequal workers, and schedulers in every mode on it, without backups
// and with the default backup copies; several share one policy.
struct Epoch {
  explicit Epoch(std::uint64_t seed) : pool(options(seed)) {
    const auto without = ata::testing::without_backups();
    for (ata::Policy* policy :
         std::initializer_list<ata::Policy*>{&ata_e, &uta, &gta, &pull, &ata_e}) {
      schedulers.emplace_back(pool, *policy, without);
      backed_up.push_back(false);
    }
    for (ata::Policy* policy : std::initializer_list<ata::Policy*>{&ata_e, &uta, &pull}) {
      schedulers.emplace_back(pool, *policy);
      backed_up.push_back(true);
    }
  }
  static rt::PoolOptions options(std::uint64_t seed) {
    using ata::models::TimeModel;
    rt::PoolOptions o(4);
    // Worker 1 sleeps after a quarter of its tasks (mean 50 us then), worker 2 burns 1 us
    // after each, worker 3 does each task twice.
    o.set_slowdown(
         1, rt::Slowdown::sleep(TimeModel::mixture({0.75, 0.25}, {TimeModel::constant(0.0),
                                                                  TimeModel::exponential(50.0)}),
                                std::chrono::microseconds(1)))
        .set_slowdown(2, rt::Slowdown::burn(TimeModel::constant(1.0), std::chrono::microseconds(1)))
        .set_slowdown(3, rt::Slowdown::repeat(2))
        .set_seed(seed);
    return o;
  }

  rt::WorkerPool pool;
  ata::AtaEmpiricalPolicy ata_e{4, 1.0};
  ata::UniformPolicy uta{4};
  ata::DynamicPolicy gta{4, ata::Dispatch::greedy};
  ata::DynamicPolicy pull{4, ata::Dispatch::pull};
  std::deque<rt::BatchScheduler> schedulers;  // not movable
  std::vector<bool> backed_up;                // schedulers[k] runs backup copies
};

// The pool in use; replaced (and the old one shut down) by the chaos thread.
class CurrentEpoch {
 public:
  std::shared_ptr<Epoch> get() {
    std::lock_guard lock(mutex_);
    return epoch_;
  }
  std::shared_ptr<Epoch> replace(std::shared_ptr<Epoch> next) {
    std::lock_guard lock(mutex_);
    return std::exchange(epoch_, std::move(next));
  }

 private:
  std::mutex mutex_;
  std::shared_ptr<Epoch> epoch_;
};

struct Tally {
  std::size_t succeeded = 0;
  std::size_t task_failed = 0;  // InjectedFault
  std::size_t shut_down = 0;    // ShutdownError
  std::size_t tasks_requested = 0;
  std::size_t results = 0;  // values returned by the batches that succeeded
  std::size_t discarded = 0;
  std::vector<std::string> problems;
};

std::uint64_t tag(std::size_t batch, std::size_t task) {
  return (static_cast<std::uint64_t>(batch) << 32) | task;
}

// A task's result: which task it is, and its work (so that the work is not optimised away).
struct Result {
  std::uint64_t tag;
  std::uint64_t work;
};

// Runs one batch and checks what came back.
void run_one(rt::BatchScheduler& scheduler, bool backed_up, std::size_t id, std::size_t batch,
             std::mt19937_64& rng, std::atomic<std::size_t>& executed, Tally& tally) {
  const std::size_t slots = batch + 4;  // greedy starts at most B + n - 1 tasks
  // Per task index: the workers that ran it (a bit each) and how often its body was called
  // (twice on worker 3, which repeats its tasks, unless stopped in between).
  std::vector<std::atomic<std::uint8_t>> ran_on(slots);
  std::vector<std::atomic<std::uint8_t>> calls(slots);
  // Once per worker it ran on (a backup copy is a run on another worker), twice on worker 3.
  const auto ran_once = [&](std::size_t t) {
    const unsigned mask = ran_on[t].load();
    const unsigned workers = static_cast<unsigned>(std::popcount(mask));
    const unsigned most = workers + ((mask & 8u) != 0 ? 1u : 0u);
    return mask != 0 && (backed_up || workers == 1) && calls[t].load() <= most;
  };
  // One batch in 16 has a failing task; about one task in 100 runs long unless stopped.
  const std::size_t failing = rng() % 16 == 0 ? rng() % batch : slots;
  const std::uint64_t long_tasks = rng();
  auto task = [&](const rt::TaskContext& ctx) {
    const std::size_t t = ctx.task();
    if (t >= slots) throw std::logic_error("task index " + std::to_string(t) + " out of range");
    ran_on[t].fetch_or(static_cast<std::uint8_t>(1u << ctx.worker()), std::memory_order_relaxed);
    if (calls[t].fetch_add(1, std::memory_order_relaxed) == 0) {
      executed.fetch_add(1, std::memory_order_relaxed);
    }
    const int steps = ((long_tasks >> (t % 64)) & 1) != 0 && t % 50 == 0 ? 200'000 : 200;
    std::uint64_t x = tag(id, t);
    for (int step = 0; step < steps; ++step) {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      if (step % 256 == 255 && ctx.stop_requested()) break;
    }
    if (t == failing) {
      throw InjectedFault("batch " + std::to_string(id) + " task " + std::to_string(t));
    }
    return Result{tag(id, t), x};
  };
  const auto problem = [&](const std::string& what) {
    tally.problems.push_back("batch " + std::to_string(id) + " (B = " + std::to_string(batch) +
                             "): " + what);
  };
  tally.tasks_requested += batch;
  try {
    auto [values, report] = scheduler.run(batch, task);
    ++tally.succeeded;
    tally.results += values.size();
    tally.discarded += report.discarded();
    if (values.size() != batch) problem(std::to_string(values.size()) + " results");
    if (report.learning_error) problem("learning error");
    // Every task that ran is recorded exactly once, by its index; its result, if accepted, is
    // at its place in task-index order.
    // With backups, the B accepted records come first and the lost copies after them.
    const bool tracked = backed_up && report.dispatch != ata::Dispatch::greedy;
    const std::size_t by_index = tracked ? std::min(batch, report.tasks.size()) : report.tasks.size();
    for (std::size_t k = by_index; k < report.tasks.size(); ++k) {
      const auto& lost = report.tasks[k];
      if (lost.accepted || lost.task >= batch ||
          (ran_on[lost.task].load() & (1u << lost.worker)) == 0) {
        problem("copy " + std::to_string(k) + " of task " + std::to_string(lost.task) +
                " is not a lost copy it ran");
      }
    }
    std::size_t j = 0;
    for (std::size_t t = 0; t < by_index; ++t) {
      const auto& record = report.tasks[t];
      if (record.task != t)
        problem("record " + std::to_string(t) + " is task " + std::to_string(record.task));
      const unsigned on = ran_on[t].load();
      if (!ran_once(t) || (tracked ? (on & (1u << record.worker)) == 0 : on != 1u << record.worker)) {
        problem("task " + std::to_string(t) + " ran on workers " +
                std::to_string(ran_on[t].load()) + " (a bit each), " +
                std::to_string(calls[t].load()) + " calls");
      }
      if (!record.accepted) continue;
      if (j >= values.size() || values[j].tag != tag(id, t)) {
        problem("result " + std::to_string(j) + " is not task " + std::to_string(t) + "'s");
      }
      ++j;
    }
    if (j != batch) problem(std::to_string(j) + " accepted records");
    for (std::size_t t = report.tasks.size(); t < slots; ++t) {
      if (calls[t].load() != 0) problem("unrecorded task " + std::to_string(t) + " ran");
    }
    if (report.dispatch != ata::Dispatch::greedy && report.tasks.size() != batch + (tracked ? report.discarded() : 0)) {
      problem(std::to_string(report.tasks.size()) + " tasks ran");
    }
  } catch (const InjectedFault& e) {
    ++tally.task_failed;
    if (failing == slots) problem(std::string("unexpected fault: ") + e.what());
  } catch (const rt::ShutdownError&) {
    ++tally.shut_down;
  } catch (const std::exception& e) {
    problem(std::string("unexpected exception: ") + e.what());
  }
  // Nothing runs twice, whatever the outcome.
  for (std::size_t t = 0; t < slots; ++t) {
    if (calls[t].load() > 0 && !ran_once(t)) problem("task " + std::to_string(t) + " ran twice");
  }
}

}  // namespace

TEST_CASE("stress: 8 submitters in every mode with faults stops slowdowns and pool shutdowns",
          "[runtime][stress]") {
  const Size size = stress_size();
  constexpr std::size_t kSubmitters = 8;
  constexpr std::size_t kSamples = 20;
  // After warm-up (the first quarter of the run), resident memory may grow by at most this
  // much: allocators settling (0.3 to 0.6 MB measured), not memory kept per batch. A batch's
  // bookkeeping is about 2 KB at these sizes: keeping it for each batch after warm-up would
  // add 3 MB (modest run) or 15 MB (full run).
  constexpr std::size_t kGrowthBound = 2u << 20;

  CurrentEpoch current;
  current.replace(std::make_shared<Epoch>(1));
  std::atomic<std::size_t> next_batch = 0;
  std::atomic<std::size_t> completed = 0;
  std::atomic<std::size_t> executed = 0;
  std::vector<std::size_t> rss(kSamples, 0);
  std::vector<Tally> tallies(kSubmitters);
  std::size_t shutdowns = 0;

  const auto start = std::chrono::steady_clock::now();
  {
    std::vector<std::jthread> threads;
    for (std::size_t s = 0; s < kSubmitters; ++s) {
      threads.emplace_back([&, s] {
        std::mt19937_64 rng(1000 + s);
        for (std::size_t id; (id = next_batch.fetch_add(1)) < size.batches;) {
          const std::size_t batch = 1 + rng() % (2 * size.mean_batch - 1);
          const auto epoch = current.get();
          const std::size_t k = rng() % epoch->schedulers.size();
          run_one(epoch->schedulers[k], epoch->backed_up[k], id, batch, rng, executed, tallies[s]);
          const std::size_t done = completed.fetch_add(1) + 1;
          // Sample at every 5% of the batches (the sampling thread is whoever got there).
          if (done % (size.batches / kSamples) == 0)
            rss[done / (size.batches / kSamples) - 1] = resident_bytes();
        }
      });
    }
    // Chaos: every 1/epochs of the run, a new pool takes over and the old one is shut down
    // under the batches still running or queued on it.
    threads.emplace_back([&] {
      for (std::size_t e = 1; e < size.epochs; ++e) {
        const std::size_t at = e * size.batches / size.epochs;
        while (completed.load() < at) std::this_thread::sleep_for(1ms);
        const auto old = current.replace(std::make_shared<Epoch>(e + 1));
        old->pool.shutdown();
        ++shutdowns;
      }
    });
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  Tally total;
  for (const Tally& t : tallies) {
    total.succeeded += t.succeeded;
    total.task_failed += t.task_failed;
    total.shut_down += t.shut_down;
    total.tasks_requested += t.tasks_requested;
    total.results += t.results;
    total.discarded += t.discarded;
    for (const auto& p : t.problems) total.problems.push_back(p);
  }
  std::printf(
      "stress: %zu batches (%zu succeeded, %zu failed by a task, %zu shut down), %zu tasks "
      "requested, %zu run, %zu results, %zu discarded; %zu submitters, 4 workers, %zu "
      "pool shutdowns; %.1f s\n",
      size.batches, total.succeeded, total.task_failed, total.shut_down, total.tasks_requested,
      executed.load(), total.results, total.discarded, kSubmitters, shutdowns, seconds);
  std::printf("stress: resident memory (MB) at each 5%% of the batches:");
  for (std::size_t r : rss) std::printf(" %.1f", static_cast<double>(r) / (1 << 20));
  std::printf("\n");

  for (const auto& p : total.problems) UNSCOPED_INFO(p);
  CHECK(total.problems.empty());
  // Every batch is accounted for.
  CHECK(total.succeeded + total.task_failed + total.shut_down == size.batches);
  CHECK(shutdowns == size.epochs - 1);
  CHECK(total.succeeded > size.batches / 2);
  CHECK(total.task_failed > 0);
  // Memory stays flat after warm-up.
  const std::size_t warm = rss[kSamples / 4 - 1];
  const std::size_t peak = *std::max_element(rss.begin() + kSamples / 4, rss.end());
  CAPTURE(warm, peak);
  if (kMemoryIsMeaningful) CHECK(peak <= warm + kGrowthBound);
}

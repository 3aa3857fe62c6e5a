#include <catch2/catch_test_macros.hpp>
#include <atomic>
#include <deque>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "ata/ata.hpp"
#include "support/eventually.hpp"

namespace rt = ata::runtime;

namespace {

// What each submitter saw go wrong; checked on the main thread (Catch2 asserts there only).
struct SubmitterLog {
  std::size_t batches = 0;
  std::size_t tasks = 0;
  std::vector<std::string> problems;
};

// Runs `batches` batches of random sizes on `scheduler`, checking each result.
void submit(rt::BatchScheduler& scheduler, std::size_t batches, unsigned seed, SubmitterLog& log,
            std::atomic<std::size_t>& executed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<std::size_t> size(1, 40);
  for (std::size_t b = 0; b < batches; ++b) {
    const std::size_t batch = size(rng);
    const std::size_t tag = seed * 1000 + b;
    auto [values, report] = scheduler.run(batch, [&](const rt::TaskContext& ctx) {
      executed.fetch_add(1, std::memory_order_relaxed);
      return tag * 100 + ctx.task();
    });
    ++log.batches;
    log.tasks += report.tasks.size();
    std::size_t j = 0;
    for (const auto& record : report.tasks) {
      if (!record.accepted) continue;
      if (j >= values.size() || values[j] != tag * 100 + record.task) {
        log.problems.push_back("batch " + std::to_string(tag) + ": result " + std::to_string(j) +
                               " is not task " + std::to_string(record.task) + "'s");
      }
      ++j;
    }
    if (values.size() != batch || j != batch || report.allocation.total() != batch) {
      log.problems.push_back("batch " + std::to_string(tag) + ": " + std::to_string(values.size()) +
                             " results for B = " + std::to_string(batch));
    }
  }
}

}  // namespace

TEST_CASE("8 threads submit batches concurrently to schedulers sharing one pool",
          "[runtime][stress]") {
  constexpr std::size_t kSubmitters = 8;
  constexpr std::size_t kBatches = 250;
  rt::WorkerPool pool(4);
  // Two submitters per strategy: every mode shares the workers with every other.
  ata::AtaEmpiricalPolicy ata_e(4, 1.0);
  ata::UniformPolicy uta(4);
  ata::DynamicPolicy gta(4, ata::Dispatch::greedy);
  ata::DynamicPolicy pull(4, ata::Dispatch::pull);
  std::deque<rt::BatchScheduler> schedulers;  // not movable: it holds a mutex
  for (ata::Policy* policy : std::initializer_list<ata::Policy*>{&ata_e, &uta, &gta, &pull}) {
    schedulers.emplace_back(pool, *policy);
  }

  std::atomic<std::size_t> executed = 0;
  std::vector<SubmitterLog> logs(kSubmitters);
  {
    std::vector<std::jthread> submitters;
    for (unsigned s = 0; s < kSubmitters; ++s) {
      submitters.emplace_back(
          [&, s] { submit(schedulers[s % 4], kBatches, s + 1, logs[s], executed); });
    }
  }

  std::size_t reported = 0;
  for (const auto& log : logs) {
    CHECK(log.batches == kBatches);
    for (const auto& problem : log.problems) UNSCOPED_INFO(problem);
    CHECK(log.problems.empty());
    reported += log.tasks;
  }
  // Every task that ran, surplus greedy ones included, is in some report, and vice versa.
  CHECK(executed.load() == reported);
  for (const auto& scheduler : schedulers) CHECK(scheduler.rounds() == 2 * kBatches);
  // A pull or greedy batch may end before every worker reached its copy, which the worker
  // then skips: the queues empty soon after, not necessarily by the time run() returns
  // (67 copies were still queued once, under AddressSanitizer).
  CHECK(ata::testing::eventually([&] { return pool.queued_chunks() == 0; }));
  // Only the allocated policies count rounds of their own.
  CHECK(ata_e.round() == 2 * kBatches);
}

TEST_CASE("schedulers sharing one policy take turns with it", "[runtime][scheduler]") {
  constexpr std::size_t kBatches = 150;
  constexpr std::size_t kBatch = 8;
  rt::WorkerPool first(2);
  rt::WorkerPool second(2);
  ata::AtaEmpiricalPolicy shared(2, 1.0);
  std::deque<rt::BatchScheduler> schedulers;
  schedulers.emplace_back(first, shared);
  schedulers.emplace_back(second, shared);
  schedulers.emplace_back(first, shared);
  {
    std::vector<std::jthread> submitters;
    for (std::size_t s = 0; s < 4; ++s) {
      submitters.emplace_back([&, s] {
        for (std::size_t b = 0; b < kBatches; ++b) {
          (void)schedulers[s % 3].run(kBatch,
                                      [](const rt::TaskContext& ctx) { return ctx.task(); });
        }
      });
    }
    // Reading the policy while they run takes its lock. A round is allocated before its
    // tasks are observed.
    for (int k = 0; k < 20; ++k) {
      std::lock_guard lock(shared.mutex());
      CHECK(shared.stats(0).count() + shared.stats(1).count() <= kBatch * shared.round());
    }
  }
  std::size_t rounds = 0;
  for (const auto& scheduler : schedulers) rounds += scheduler.rounds();
  CHECK(rounds == 4 * kBatches);
  CHECK(shared.round() == rounds);
  CHECK(shared.stats(0).count() + shared.stats(1).count() == kBatch * rounds);
}

// The batch protocol under BatchScheduler::run(), tested directly: completion hook, cancel(),
// skipped chunks, allocation-free submission. Front ends other than the blocking run() build
// on exactly this.
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <semaphore>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "ata/ata.hpp"
#include "runtime/batch.hpp"
#include "runtime/thread_lanes.hpp"
#include "support/failing_allocator.hpp"
#include "support/eventually.hpp"

using namespace std::chrono_literals;
namespace rt = ata::runtime;
using ata::testing::eventually;
namespace detail = ata::runtime::detail;

namespace {

ata::Plan plan_for(ata::Dispatch mode, ata::Allocation allocation, std::size_t workers) {
  if (mode == ata::Dispatch::allocated) return ata::Plan::quotas(std::move(allocation));
  return ata::Plan::race(workers, mode == ata::Dispatch::greedy ? ata::RaceKind::fungible
                                                                : ata::RaceKind::indexed);
}

// An indexed race runs on the lanes tracked only: a recovery without backups or retries.
std::optional<detail::Recovery> recovery_for(ata::Dispatch mode) {
  if (mode != ata::Dispatch::pull) return std::nullopt;
  detail::Recovery recovery;
  recovery.backups = ata::BackupOptions{}.set_mode(ata::BackupMode::off);
  return recovery;
}

// Records how often, and on which thread, its completion hook ran.
class RecordingBatch final : public detail::Batch {
 public:
  // Timed task by task, summarised: the scheduler's default. `allocation` gives the quotas of
  // Dispatch::allocated; the other modes race over every worker.
  RecordingBatch(ata::Dispatch mode, std::size_t batch, std::size_t round,
                 ata::Allocation allocation, std::size_t workers, detail::TaskBody& body,
                 std::optional<detail::Recovery> recovery = std::nullopt)
      : Batch(plan_for(mode, std::move(allocation), workers), detail::Timing::summaries, batch,
              round, body, true, recovery ? std::move(recovery) : recovery_for(mode)) {}

  std::atomic<int> completions{0};
  std::atomic<std::thread::id> completed_on{};

  [[nodiscard]] bool completes() const {
    return eventually([&] { return completions.load() > 0; });
  }

 private:
  void on_complete() noexcept override {
    completed_on.store(std::this_thread::get_id());
    completions.fetch_add(1);
  }
};

// A task that counts its calls and returns its index.
struct CountingTask {
  std::atomic<int>* calls;
  std::size_t operator()(const rt::TaskContext& ctx) const {
    calls->fetch_add(1);
    return ctx.task();
  }
};
using CountingBody = detail::TypedTaskBody<CountingTask, std::size_t>;

// A task that holds its worker until released.
struct GateTask {
  std::counting_semaphore<>* gate;
  std::atomic<int>* started;
  void operator()(const rt::TaskContext&) const {
    started->fetch_add(1);
    gate->acquire();
  }
};
using GateBody = detail::TypedTaskBody<GateTask, void>;

// One task on each worker of `core`, each waiting on the gate; returns once all run.
std::shared_ptr<RecordingBatch> hold_every_worker(detail::ThreadLanes& core, GateBody& body,
                                                  const std::atomic<int>& started) {
  const std::size_t n = core.size();
  auto gate = std::make_shared<RecordingBatch>(
      ata::Dispatch::allocated, n, 1, ata::Allocation(std::vector<std::size_t>(n, 1)), n, body);
  gate->submit(core);
  REQUIRE(eventually([&] { return started.load() == static_cast<int>(n); }));
  return gate;
}

}  // namespace

TEST_CASE("a batch cancelled before any worker reached it completes at once, on the canceller",
          "[runtime][batch]") {
  detail::ThreadLanes core(rt::PoolOptions(2));
  std::counting_semaphore<> gate(0);
  std::atomic<int> started = 0;
  GateTask hold{&gate, &started};
  GateBody gate_body(hold, 2, 2);
  const auto held = hold_every_worker(core, gate_body, started);

  std::atomic<int> calls = 0;
  CountingTask count{&calls};
  const auto mode = GENERATE(ata::Dispatch::pull, ata::Dispatch::greedy);
  {
    CountingBody body(count, 4, 2);
    auto batch = std::make_shared<RecordingBatch>(mode, 4, 1, ata::Allocation(), 2, body);
    batch->submit(core);
    batch->cancel();
    CHECK(batch->completions.load() == 1);
    CHECK(batch->completed_on.load() == std::this_thread::get_id());
    CHECK(batch->outcome() == detail::Batch::Outcome::cancelled);
    batch->cancel();  // idempotent
    CHECK(batch->completions.load() == 1);
  }  // the task body is gone; the batch's chunks are still queued on both workers

  gate.release(2);
  REQUIRE(held->completes());
  // Worker queues are FIFO: once this batch completes, both stale chunks have been reached.
  CountingBody flush_body(count, 2, 2);
  auto flush = std::make_shared<RecordingBatch>(ata::Dispatch::allocated, 2, 2,
                                                ata::Allocation(std::vector<std::size_t>{1, 1}), 2,
                                                flush_body);
  flush->submit(core);
  REQUIRE(flush->completes());
  CHECK(calls.load() == 2);  // the flush's two tasks; the cancelled batch's none
}

TEST_CASE("cancel stops a running batch, which completes when its worker leaves",
          "[runtime][batch]") {
  detail::ThreadLanes core(rt::PoolOptions(1));
  std::atomic<bool> started = false;
  std::atomic<int> calls = 0;
  auto until_stopped = [&](const rt::TaskContext& ctx) {
    calls.fetch_add(1);
    started = true;
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!ctx.stop_requested() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(100us);
    }
    return ctx.stop_requested();
  };
  detail::TypedTaskBody<decltype(until_stopped), bool> body(until_stopped, 3, 1);
  auto batch = std::make_shared<RecordingBatch>(
      ata::Dispatch::allocated, 3, 1, ata::Allocation(std::vector<std::size_t>{3}), 1, body);
  batch->submit(core);
  REQUIRE(eventually([&] { return started.load(); }));
  batch->cancel();
  REQUIRE(batch->completes());
  CHECK(batch->completions.load() == 1);
  CHECK(batch->completed_on.load() != std::this_thread::get_id());  // the worker, on leaving
  CHECK(batch->outcome() == detail::Batch::Outcome::cancelled);
  CHECK(calls.load() == 1);  // tasks 1 and 2 were skipped
}

TEST_CASE("cancel after completion changes nothing", "[runtime][batch]") {
  detail::ThreadLanes core(rt::PoolOptions(2));
  std::atomic<int> calls = 0;
  CountingTask count{&calls};
  CountingBody body(count, 6, 2);
  auto batch =
      std::make_shared<RecordingBatch>(ata::Dispatch::pull, 6, 1, ata::Allocation(), 2, body);
  batch->submit(core);
  REQUIRE(batch->completes());
  batch->cancel();
  CHECK(batch->outcome() == detail::Batch::Outcome::succeeded);
  CHECK(batch->completions.load() == 1);
  rt::RoundReport report;
  std::vector<std::size_t> slot_order;
  batch->collect(report, slot_order);
  CHECK(report.tasks.size() == 6);
  CHECK(body.take(slot_order) == std::vector<std::size_t>{0, 1, 2, 3, 4, 5});
}

TEST_CASE("submitting a batch allocates nothing, so it reaches every worker or none",
          "[runtime][batch][errors]") {
  detail::ThreadLanes core(rt::PoolOptions(2));
  std::counting_semaphore<> gate(0);
  std::atomic<int> started = 0;
  GateTask hold{&gate, &started};
  GateBody gate_body(hold, 2, 2);
  const auto held = hold_every_worker(core, gate_body, started);

  // Enough queued chunks per worker to outgrow any buffer a queue might keep.
  constexpr std::size_t kBatches = 200;
  std::atomic<int> calls = 0;
  CountingTask count{&calls};
  std::vector<std::unique_ptr<CountingBody>> bodies;
  std::vector<std::shared_ptr<RecordingBatch>> batches;
  for (std::size_t b = 0; b < kBatches; ++b) {
    bodies.push_back(std::make_unique<CountingBody>(count, 2, 2));
    batches.push_back(std::make_shared<RecordingBatch>(ata::Dispatch::pull, 2, b + 1,
                                                       ata::Allocation(), 2, *bodies.back()));
  }
  long allocations = 0;
  {
    const auto counting = ata::testing::AllocationFaults::count();
    for (const auto& batch : batches) batch->submit(core);
    allocations = counting.allocations();
  }
  CHECK(allocations == 0);
  CHECK(core.queued() == 2 * kBatches);

  gate.release(2);
  for (const auto& batch : batches) REQUIRE(batch->completes());
  CHECK(calls.load() == static_cast<int>(2 * kBatches));
  REQUIRE(eventually([&] { return core.queued() == 0; }));
}

namespace {

// Throws on the first attempt at task `flaky`.
struct FlakyTask {
  std::vector<std::atomic<int>>* attempts;
  std::size_t flaky;
  std::size_t operator()(const rt::TaskContext& ctx) const {
    if (ctx.task() == flaky && (*attempts)[flaky]++ == 0) throw std::runtime_error("flaky");
    return ctx.task();
  }
};
using FlakyBody = detail::TypedTaskBody<FlakyTask, std::size_t>;

}  // namespace

TEST_CASE("a kept tracked state serves batch after batch past the wrap of its generations",
          "[runtime][batch]") {
  // A kept state marks its per-task flags and states with its batch's generation (1 to 255)
  // rather than clearing them. One state, kept and taken again by each of 600 batches, wraps
  // twice. Every 255th batch has 12 tasks and the others 4, so that tasks 4 to 11 keep the
  // marks of a batch until the same generation comes round again. In each batch one task
  // fails once and is retried: a failure or a claim left by an earlier batch would refuse the
  // retry, or count a result that no copy of this batch gave.
  constexpr std::size_t kWorkers = 2;
  constexpr std::size_t kRounds = 600;
  detail::ThreadLanes core{rt::PoolOptions(kWorkers)};
  const auto cache = std::make_shared<detail::TrackedStateCache>();
  for (std::size_t round = 0; round < kRounds; ++round) {
    CAPTURE(round);
    const std::size_t tasks = round % 255 == 0 ? 12 : 4;
    std::vector<std::atomic<int>> attempts(tasks);
    FlakyTask task{&attempts, tasks == 12 ? 7 : round % tasks};
    FlakyBody body(task, tasks, kWorkers);
    detail::Recovery recovery;
    recovery.backups = ata::BackupOptions{}.set_mode(ata::BackupMode::off);
    recovery.retries = 1;
    recovery.cache = cache;
    auto batch = std::make_shared<RecordingBatch>(
        ata::Dispatch::allocated, tasks, round + 1,
        ata::Allocation(std::vector<std::size_t>{tasks / 2, tasks / 2}), kWorkers, body,
        std::move(recovery));
    batch->submit(core);
    REQUIRE(batch->completes());
    REQUIRE(batch->outcome() == detail::Batch::Outcome::succeeded);
    rt::RoundReport report;
    std::vector<std::size_t> slot_order;
    batch->collect(report, slot_order);
    REQUIRE(report.retries == 1);
    REQUIRE(attempts[task.flaky] == 2);
    std::vector<std::size_t> expected(tasks);
    for (std::size_t j = 0; j < tasks; ++j) expected[j] = j;
    REQUIRE(body.take(slot_order) == expected);
    // The lanes let go of it: its state goes back to the cache, for the next batch.
    REQUIRE(eventually([&] { return batch.use_count() == 1; }));
    batch.reset();
  }
}

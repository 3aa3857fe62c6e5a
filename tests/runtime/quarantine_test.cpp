// A quarantined (stuck) lane gets no work: neither a share of an allocation, whatever the
// policy, nor a retry while another lane could take it (issue 25, defects 7 and 8).

#include <catch2/catch_test_macros.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <stop_token>
#include <thread>
#include <vector>

#include "ata/ata.hpp"
#include "runtime/quarantine.hpp"
#include "support/without_backups.hpp"

using namespace std::chrono_literals;
namespace rt = ata::runtime;

namespace {

// Lane 0 of a 3-lane pool blocked in a task of another scheduler's batch (backups on, so that
// batch completed without it) until released, and listed by stuck_lanes(). A watchdog
// releases it after a while, so that a batch wrongly queued behind it ends and the test
// fails instead of hanging; the destructor releases it too.
class StuckLane {
 public:
  static constexpr std::size_t kWorkers = 3;

  StuckLane() : pool_(kWorkers), policy_({1.0, 1.0, 1.0}) {
    rt::BatchScheduler scheduler(
        pool_, policy_,
        rt::SchedulerOptions{}.set_backups(ata::BackupOptions{}.set_mode(ata::BackupMode::on)));
    const auto gate = gate_;
    const auto make_task = [gate] {
      auto task = [gate](const rt::TaskContext& ctx) {
        if (ctx.worker() == 0 && gate->armed.exchange(false)) {
          gate->blocked = true;
          std::unique_lock lock(gate->mutex);  // ignores its stop request
          gate->changed.wait(lock, [&] { return gate->released; });
          gate->blocked = false;
        } else {
          std::this_thread::sleep_for(1ms);
        }
        return ctx.task();
      };
      return std::make_shared<decltype(task)>(std::move(task));
    };
    // Until every lane has a learned mean (a lane without one is never stuck): on a loaded
    // machine a lane may wake too late to run any task of a batch.
    for (int warm_up = 0; warm_up < 3 || !every_lane_learned(); ++warm_up) {
      REQUIRE(warm_up < 100);
      (void)scheduler.run(9, make_task());
    }
    gate_->armed = true;
    // Completes without lane 0. On a loaded machine the other lanes may take lane 0's whole
    // share over before it wakes: then it ran no task, and the next batch arms it again.
    for (int tries = 0; tries < 20 && gate_->armed.load(); ++tries) {
      (void)scheduler.run(9, make_task());
    }
    const auto give_up = std::chrono::steady_clock::now() + 20s;
    while (pool_.stuck_lanes().empty() && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(1ms);
    }
    REQUIRE(pool_.stuck_lanes() == std::vector<std::size_t>{0});
    watchdog_ = std::jthread([gate](const std::stop_token& stop) {
      std::unique_lock lock(gate->mutex);
      gate->changed.wait_for(lock, stop, 10s, [&] { return gate->released; });
      gate->released = true;
      gate->changed.notify_all();
    });
  }
  ~StuckLane() {
    release();
    watchdog_.request_stop();
    // The pool's destructor waits for lane 0's task, which ends now.
  }
  StuckLane(const StuckLane&) = delete;
  StuckLane& operator=(const StuckLane&) = delete;

  rt::WorkerPool& pool() { return pool_; }
  bool every_lane_learned() {
    std::lock_guard lock(policy_.mutex());
    for (std::size_t i = 0; i < kWorkers; ++i) {
      if (policy_.stats(i).count() == 0) return false;
    }
    return true;
  }
  // Whether lane 0 still blocks (it does until release() or the watchdog).
  bool blocked() const { return gate_->blocked.load(); }
  void release() {
    {
      std::lock_guard lock(gate_->mutex);
      gate_->released = true;
    }
    gate_->changed.notify_all();
  }

 private:
  struct Gate {
    std::atomic<bool> armed{false};
    std::atomic<bool> blocked{false};
    std::mutex mutex;
    std::condition_variable_any changed;
    bool released = false;
  };
  std::shared_ptr<Gate> gate_ = std::make_shared<Gate>();
  rt::WorkerPool pool_;
  ata::OraclePolicy policy_;
  std::jthread watchdog_;
};

void check_kept_off_lane_0(const std::vector<std::size_t>& values, const rt::RoundReport& report,
                           std::size_t batch) {
  REQUIRE(values.size() == batch);
  for (std::size_t j = 0; j < batch; ++j) CHECK(values[j] == j);
  CHECK(report.allocation[0] == 0);
  std::size_t given = 0;
  for (std::size_t tasks : report.allocation) given += tasks;
  CHECK(given == batch);
  CHECK(std::none_of(report.tasks.begin(), report.tasks.end(),
                     [](const rt::TaskRecord& t) { return t.worker == 0; }));
}

}  // namespace

TEST_CASE("a stuck lane gets no share, whatever the policy and the backups",
          "[runtime][stragglers][quarantine]") {
  constexpr std::size_t kBatch = 9;
  StuckLane stuck;
  const auto task = [](const rt::TaskContext& ctx) { return ctx.task(); };
  const auto check = [&](ata::Policy& policy, const rt::SchedulerOptions& options) {
    rt::BatchScheduler scheduler(stuck.pool(), policy, options);
    for (int round = 0; round < 3; ++round) {
      auto [values, report] = scheduler.run(kBatch, task);
      CHECK(stuck.blocked());  // returned while lane 0 still blocks: nothing waited for it
      check_kept_off_lane_0(values, report, kBatch);
    }
    // The policy learned only from the lanes that ran the tasks.
    std::lock_guard lock(policy.mutex());
    CHECK(policy.stats(0).count() == 0);
    CHECK(policy.stats(1).count() + policy.stats(2).count() == 3 * kBatch);
  };
  // UTA ignores backlogs; ATA-E has no score for an unexplored worker in its first rounds.
  SECTION("UTA, backups off") {
    ata::UniformPolicy policy(StuckLane::kWorkers);
    check(policy, rt::SchedulerOptions{});
  }
  SECTION("UTA, backup copies only") {
    ata::UniformPolicy policy(StuckLane::kWorkers);
    check(policy, rt::SchedulerOptions{}.set_backups(
                      ata::BackupOptions{}.set_mode(ata::BackupMode::copies)));
  }
  SECTION("ATA-E in its first rounds, backups off") {
    ata::AtaEmpiricalPolicy policy(StuckLane::kWorkers, 1.0);
    check(policy, rt::SchedulerOptions{});
  }
  SECTION("ATA-E in its first rounds, retries only") {
    ata::AtaEmpiricalPolicy policy(StuckLane::kWorkers, 1.0);
    check(policy, ata::testing::without_backups().set_retries(1));
  }
}

TEST_CASE("a retry goes to an idle lane, not to the stuck one",
          "[runtime][stragglers][quarantine][errors]") {
  StuckLane stuck;
  // Lane 0 has no share (a load-aware policy that knows every lane), nor has one of the
  // other two: the first lane without a share is the stuck one.
  ata::OraclePolicy policy({1.0, 1.0, 1.0});
  rt::BatchScheduler scheduler(stuck.pool(), policy, ata::testing::without_backups().set_retries(1));
  std::atomic<int> attempts{0};
  std::atomic<std::size_t> failed_on{0};
  auto [values, report] = scheduler.run(1, [&](const rt::TaskContext& ctx) {
    if (attempts++ == 0) {
      failed_on = ctx.worker();
      throw std::runtime_error("flaky");
    }
    return ctx.task();
  });
  CHECK(stuck.blocked());  // the retry did not wait behind lane 0's task
  REQUIRE(values.size() == 1);
  CHECK(attempts == 2);
  CHECK(report.retries == 1);
  REQUIRE(report.tasks.size() == 2);  // the accepted attempt, then the failed one
  CHECK(report.tasks[0].accepted);
  CHECK(report.tasks[0].worker != 0);
  CHECK(report.tasks[0].worker != failed_on.load());
}

TEST_CASE("a stuck lane's share goes to the others in proportion to theirs",
          "[runtime][stragglers][quarantine]") {
  using ata::Allocation;
  using ata::runtime::detail::move_off_stuck;
  const auto moved = [](std::vector<std::size_t> tasks, std::vector<std::size_t> stuck) {
    Allocation allocation(std::move(tasks));
    move_off_stuck(stuck, allocation);
    return std::vector<std::size_t>(allocation.begin(), allocation.end());
  };
  // UTA's 3, 3, 3: lane 0's 3 split 1.5 / 1.5, the remainder to the lower index.
  CHECK(moved({3, 3, 3}, {0}) == std::vector<std::size_t>{0, 5, 4});
  // Proportional: lane 1 had twice lane 2's share.
  CHECK(moved({6, 4, 2}, {0}) == std::vector<std::size_t>{0, 8, 4});
  // The others had nothing (the policy put everything on the stuck lane): equal shares.
  CHECK(moved({7, 0, 0}, {0}) == std::vector<std::size_t>{0, 4, 3});
  CHECK(moved({5, 1, 4, 0}, {0, 2}) == std::vector<std::size_t>{0, 10, 0, 0});
  CHECK(moved({2, 2}, {}) == std::vector<std::size_t>{2, 2});
  CHECK(moved({0, 4}, {0}) == std::vector<std::size_t>{0, 4});
  // Every lane stuck: nowhere else to go.
  CHECK(moved({2, 3}, {0, 1}) == std::vector<std::size_t>{2, 3});
  // The largest batch keeps its total.
  const std::size_t big = ata::runtime::BatchScheduler::kMaxBatch;
  const auto spread = moved({big - 2, 1, 1}, {0});
  CHECK(spread[0] == 0);
  CHECK(spread[1] + spread[2] == big);
}

TEST_CASE("a copy that lost to a backup and ignores its stop does not hold back its share",
          "[runtime][stragglers][quarantine]") {
  // Lane 0 is learned faster than lane 1, so lane 1 takes none of lane 0's unstarted tasks
  // over while lane 0 works; lane 0's first task then blocks, ignoring its stop request, after
  // lane 1's backup copy of it has given the result. Lane 0's second task must go to lane 1
  // once lane 0 is stuck, not wait for the blocked copy.
  rt::WorkerPool pool(2);
  ata::OraclePolicy policy({1.0, 1.0});
  rt::BatchScheduler scheduler(
      pool, policy,
      rt::SchedulerOptions{}.set_backups(ata::BackupOptions{}.set_mode(ata::BackupMode::on)));
  struct Gate {
    std::atomic<bool> armed{false};
    std::atomic<bool> blocked{false};
    std::mutex mutex;
    std::condition_variable_any changed;
    bool released = false;
  };
  const auto gate = std::make_shared<Gate>();
  const auto make_task = [gate] {
    auto task = [gate](const rt::TaskContext& ctx) {
      if (ctx.worker() == 0 && gate->armed.exchange(false)) {
        gate->blocked = true;
        std::unique_lock lock(gate->mutex);  // ignores its stop request
        gate->changed.wait(lock, [&] { return gate->released; });
        gate->blocked = false;
      } else {
        std::this_thread::sleep_for(ctx.worker() == 0 ? 1ms : 3ms);
      }
      return ctx.task();
    };
    return std::make_shared<decltype(task)>(std::move(task));
  };
  // Until both lanes have a learned mean (on a loaded machine a lane may wake too late to
  // run any task of a batch), lane 0's the smaller.
  const auto learned = [&] {
    std::lock_guard lock(policy.mutex());
    return policy.stats(0).count() > 0 && policy.stats(1).count() > 0 &&
           policy.stats(0).mean() < policy.stats(1).mean();
  };
  for (int warm_up = 0; warm_up < 3 || !learned(); ++warm_up) {
    REQUIRE(warm_up < 100);
    (void)scheduler.run(4, make_task());
  }
  gate->armed = true;
  // Releases lane 0 after a while, so that a batch wrongly waiting for it ends.
  std::jthread watchdog([gate](const std::stop_token& stop) {
    std::unique_lock lock(gate->mutex);
    gate->changed.wait_for(lock, stop, 10s, [&] { return gate->released; });
    gate->released = true;
    gate->changed.notify_all();
  });
  // On a loaded machine lane 0 may run no task of a batch (lane 1 took its share over before
  // it woke): the gate stays armed for the next one.
  ata::runtime::BatchResult<std::size_t> result;
  for (int tries = 0; tries < 20 && gate->armed.load(); ++tries) {
    result = scheduler.run(4, make_task());
  }
  const auto& [values, report] = result;
  CHECK(gate->blocked.load());  // returned while lane 0 still blocks
  CHECK(values == std::vector<std::size_t>{0, 1, 2, 3});
  CHECK(report.backup_copies + report.takeovers >= 1);
  {
    std::lock_guard lock(gate->mutex);
    gate->released = true;
  }
  gate->changed.notify_all();
}

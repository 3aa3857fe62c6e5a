// [core] The late-binding rule (ata::reached_by_others) against a brute force that plays the
// busy workers' task ends forward in time.
#include "ata/core/late_binding_rule.hpp"

#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <random>
#include <vector>

#include "ata/ata.hpp"

using ata::PacedWorker;

namespace {

// The tasks the busy workers other than `worker` end within its mean from `now`: each is free
// after max(m - e, e), then ends one task per mean; a pending worker takes one unless it has
// waited past max(mine, grace).
std::size_t played_forward(const std::vector<PacedWorker>& workers, std::size_t worker, double now,
                           std::size_t waiting, double grace) {
  const double mine = workers[worker].mean;
  std::size_t reached = 0;
  for (std::size_t j = 0; j < workers.size(); ++j) {
    const PacedWorker& w = workers[j];
    if (j == worker || !w.busy) continue;
    std::size_t ends = 0;
    if (mine > 0.0 && w.mean > 0.0) {
      const double ran = now - w.started;
      double t = now + std::max(w.mean - ran, ran) + w.mean;  // its first waiting task's end
      // Relative slack: the rule's floor() of a quotient ties where this sum lands exactly.
      while (t <= now + mine + 1e-9 * (now + mine)) {
        ++ends;
        t += w.mean;
      }
    }
    if (w.pending && now - w.started < std::max(mine, grace)) ends = std::max<std::size_t>(ends, 1);
    reached += ends;
  }
  return std::min(reached, waiting);
}

}  // namespace

TEST_CASE("late binding: a slow free worker skips the tasks the fast busy ones reach first",
          "[core][late_binding]") {
  // Worker 0 (mean 1) busy since t = 0; worker 1 (mean 3) free at t = 0: by t = 3, worker 0
  // ends its own task at 1 and two waiting ones, at 2 and 3.
  std::vector<PacedWorker> view{{1.0, true, false, 0.0}, {3.0, false, false, 0.0}};
  CHECK(ata::reached_by_others(view, 1, 0.0, 3, 0.01) == 2);
  CHECK(ata::reached_by_others(view, 1, 0.0, 2, 0.01) == 2);  // it would wait
  // A task past its mean is taken for a long one: at t = 2.5 worker 0 is expected busy for
  // 2.5 more, and ends nothing within worker 1's 3.
  CHECK(ata::reached_by_others(view, 1, 2.5, 3, 0.01) == 0);
  // Not measured: counts on nobody, and nobody counts on it.
  view[1].mean = 0.0;
  CHECK(ata::reached_by_others(view, 1, 0.0, 3, 0.01) == 0);
  view[1].mean = 3.0;
  view[0].mean = 0.0;
  CHECK(ata::reached_by_others(view, 1, 0.0, 3, 0.01) == 0);
  // A worker handed a task counts for one until it is late past max(mine, grace).
  view[0] = {0.0, true, true, 0.0};
  CHECK(ata::reached_by_others(view, 1, 2.9, 3, 0.01) == 1);
  CHECK(ata::reached_by_others(view, 1, 3.1, 3, 0.01) == 0);
  // The worker itself is never counted.
  view[1].busy = true;
  CHECK(ata::reached_by_others(view, 1, 0.0, 3, 0.01) == 1);
}

TEST_CASE("late binding: the rule equals the busy workers' ends played forward",
          "[core][late_binding][property]") {
  std::mt19937_64 rng(2026);
  std::uniform_real_distribution<double> mean(0.1, 10.0);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (int trial = 0; trial < 5000; ++trial) {
    const std::size_t n = 1 + static_cast<std::size_t>(unit(rng) * 8);
    const double now = 100.0 * unit(rng);
    std::vector<PacedWorker> view(n);
    for (PacedWorker& w : view) {
      w.mean = unit(rng) < 0.1 ? 0.0 : mean(rng);
      w.busy = unit(rng) < 0.7;
      w.pending = w.busy && unit(rng) < 0.2;
      w.started = now - 20.0 * unit(rng);
    }
    const std::size_t worker = static_cast<std::size_t>(unit(rng) * static_cast<double>(n));
    const std::size_t waiting = static_cast<std::size_t>(unit(rng) * 30);
    INFO("trial " << trial);
    CHECK(ata::reached_by_others(view, worker, now, waiting, 0.01) ==
          played_forward(view, worker, now, waiting, 0.01));
  }
}

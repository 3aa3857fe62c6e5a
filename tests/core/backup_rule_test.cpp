#include "ata/core/backup_rule.hpp"

#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <limits>
#include <vector>

#include "ata/ata.hpp"

using ata::BackupAction;
using ata::BackupOptions;
using ata::BackupRule;
using ata::BackupWorker;
using Catch::Approx;
using Catch::Matchers::ContainsSubstring;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

BackupRule enabled_rule(double multiple = 4.0, std::size_t copies = 2) {
  return BackupRule(BackupOptions{}
                        .set_mode(ata::BackupMode::on)
                        .set_threshold_multiple(multiple)
                        .set_max_copies(copies));
}

BackupWorker idle(double mean) { return {mean, 0, false, 0.0, 0, true}; }
BackupWorker busy(double mean, std::size_t unstarted, double elapsed, std::size_t copies = 1) {
  return {mean, unstarted, true, elapsed, copies, false};
}

}  // namespace

TEST_CASE("backup rule: invalid options are refused", "[core][stragglers][errors]") {
  CHECK_THROWS_WITH(
      BackupRule(BackupOptions{}.set_threshold_multiple(1.0)),
      ContainsSubstring("threshold_multiple must be > 1") && ContainsSubstring("got 1"));
  CHECK_THROWS_AS(
      BackupRule(BackupOptions{}.set_threshold_multiple(std::numeric_limits<double>::quiet_NaN())),
      ata::InvalidArgument);
  CHECK_THROWS_WITH(BackupRule(BackupOptions{}.set_max_copies(0)),
                    ContainsSubstring("max_copies must be >= 1"));
  CHECK_NOTHROW(BackupRule(BackupOptions{}.set_threshold_multiple(kInf)));
}

TEST_CASE("backup rule: disabled, it never acts", "[core][stragglers]") {
  const BackupRule rule(BackupOptions{});
  const std::vector<BackupWorker> view{idle(1.0), busy(5.0, 3, 100.0)};
  CHECK(rule.next(view).kind == BackupAction::Kind::none);
  CHECK(rule.time_to_next_overdue(view) == kInf);
}

TEST_CASE("backup rule: the fastest idle worker takes the task expected to finish last",
          "[core][stragglers]") {
  const BackupRule rule = enabled_rule();
  // Worker 1: 2 left after a running task (expected finish 1 + 2 x 2 = 5); worker 2: 1 left
  // (3 + 1 x 3 = 6, the latest); worker 3 is idle but slower than worker 0.
  const std::vector<BackupWorker> view{idle(1.0), busy(2.0, 2, 1.0), busy(3.0, 1, 0.0), idle(2.5)};
  const BackupAction a = rule.next(view);
  CHECK(a.kind == BackupAction::Kind::take_over);
  CHECK(a.worker == 0);
  CHECK(a.from == 2);
}

TEST_CASE("backup rule: without take-overs, only overdue tasks get copies", "[core][stragglers]") {
  const BackupRule rule(BackupOptions{}.set_mode(ata::BackupMode::copies));
  std::vector<BackupWorker> view{idle(1.0), busy(3.0, 4, 1.0)};
  CHECK(rule.next(view).kind == BackupAction::Kind::none);
  view[1].elapsed = 12.0;
  CHECK(rule.next(view).kind == BackupAction::Kind::backup);
}

TEST_CASE("backup rule: no take-over by a slower worker or one that would finish later",
          "[core][stragglers]") {
  const BackupRule rule = enabled_rule();
  // The idle worker is slower than the owner: moving the task would cost worker time.
  CHECK(rule.next(std::vector<BackupWorker>{idle(3.0), busy(2.0, 2, 0.0)}).kind ==
        BackupAction::Kind::none);
  // Faster, but the owner's last task is expected to end before the helper's would.
  CHECK(rule.next(std::vector<BackupWorker>{idle(2.0), busy(2.0, 1, 1.9)}).kind ==
        BackupAction::Kind::take_over);  // 0.1 + 2 = 2.1 > 2
  CHECK(rule.next(std::vector<BackupWorker>{idle(2.5), busy(3.0, 0, 1.0)}).kind ==
        BackupAction::Kind::none);  // nothing unstarted, nothing overdue
}

TEST_CASE("backup rule: a copy starts once the running task is overdue, within the bound",
          "[core][stragglers]") {
  const BackupRule rule = enabled_rule(4.0, 2);
  std::vector<BackupWorker> view{idle(1.0), busy(2.0, 0, 7.9)};
  CHECK(rule.next(view).kind == BackupAction::Kind::none);
  CHECK(rule.time_to_next_overdue(view) == Approx(0.1).margin(1e-12));
  view[1].elapsed = 8.0;  // 4 x its mean
  const BackupAction a = rule.next(view);
  CHECK(a.kind == BackupAction::Kind::backup);
  CHECK(a.worker == 0);
  CHECK(a.from == 1);
  CHECK(rule.time_to_next_overdue(view) == 0.0);
  view[1].copies = 2;  // a copy already runs: the bound is reached
  CHECK(rule.next(view).kind == BackupAction::Kind::none);
  CHECK(rule.time_to_next_overdue(view) == kInf);
  CHECK(enabled_rule(4.0, 1).next(std::vector<BackupWorker>{idle(1.0), busy(2.0, 0, 100.0)}).kind ==
        BackupAction::Kind::none);
  CHECK(enabled_rule(kInf).next(std::vector<BackupWorker>{idle(1.0), busy(2.0, 0, 1e300)}).kind ==
        BackupAction::Kind::none);
}

TEST_CASE("backup rule: a slow helper waits until the task has run as long as its own mean",
          "[core][stragglers]") {
  const BackupRule rule = enabled_rule();
  std::vector<BackupWorker> view{idle(20.0), busy(1.0, 0, 10.0), busy(1.0, 0, 5.0)};
  CHECK(rule.next(view).kind == BackupAction::Kind::none);
  CHECK(rule.time_to_next_overdue(view) == Approx(10.0));
  view[1].elapsed = 20.0;
  const BackupAction a = rule.next(view);
  CHECK(a.kind == BackupAction::Kind::backup);
  CHECK(a.from == 1);  // the most overdue
}

TEST_CASE("backup rule: an unknown mean is taken to be the largest known one",
          "[core][stragglers]") {
  const BackupRule rule = enabled_rule();
  // Worker 1's mean is unknown: it is treated as 3 (worker 2's), so 12 is its threshold.
  std::vector<BackupWorker> view{idle(1.0), busy(0.0, 0, 11.0), busy(3.0, 0, 0.0)};
  CHECK(rule.next(view).kind == BackupAction::Kind::none);
  view[1].elapsed = 12.0;
  CHECK(rule.next(view).kind == BackupAction::Kind::backup);
  // Nothing known at all: no backup copy.
  CHECK(rule.next(std::vector<BackupWorker>{idle(0.0), busy(0.0, 0, 1e9)}).kind ==
        BackupAction::Kind::none);
}

TEST_CASE("backup rule: no backup copy before min_overdue", "[core][stragglers]") {
  const BackupRule rule(BackupOptions{}.set_mode(ata::BackupMode::copies).set_min_overdue(10.0));
  std::vector<BackupWorker> view = {busy(1.0, 0, 5.0), idle(1.0)};  // 5x its mean, < 10
  CHECK(rule.next(view).kind == BackupAction::Kind::none);
  CHECK(rule.time_to_next_overdue(view) == Approx(5.0));
  view[0].elapsed = 10.0;
  CHECK(rule.next(view).kind == BackupAction::Kind::backup);
  CHECK_THROWS_AS(BackupRule(BackupOptions{}.set_min_overdue(-1.0)), ata::InvalidArgument);
}

TEST_CASE("backup rule: a stalled worker's unstarted tasks go to any available worker",
          "[core][stragglers]") {
  const BackupRule rule = enabled_rule();
  // Equal means and one unstarted task: not worth a take-over from a live worker...
  std::vector<BackupWorker> view = {busy(1.0, 1, 1.0), idle(1.0)};
  CHECK(rule.next(view).kind == BackupAction::Kind::none);
  // ...but a stalled worker's task is expected never to finish, whoever helps.
  view[0].stalled = true;
  view[1].mean = 3.0;
  const BackupAction a = rule.next(view);
  CHECK(a.kind == BackupAction::Kind::take_over);
  CHECK(a.worker == 1);
  CHECK(a.from == 0);
}

TEST_CASE("backup modes parse from their names and back; anything else is refused by name",
          "[core][backups][errors]") {
  for (const auto mode : {ata::BackupMode::off, ata::BackupMode::copies, ata::BackupMode::on}) {
    CHECK(ata::parse_backup_mode(ata::backup_mode_name(mode)) == mode);
  }
  CHECK(ata::backup_mode_name(ata::BackupMode::copies) == "copies");
  CHECK_THROWS_WITH(ata::parse_backup_mode("maybe"),
                    ContainsSubstring("off, copies or on") && ContainsSubstring("'maybe'"));
  CHECK_THROWS_AS(ata::parse_backup_mode(""), ata::InvalidArgument);
  CHECK_THROWS_AS(ata::parse_backup_mode("On"), ata::InvalidArgument);
}

TEST_CASE("a backup mode says what the rule does", "[core][backups]") {
  CHECK_FALSE(BackupOptions{}.enabled());  // off by default
  CHECK(BackupOptions{}.set_mode(ata::BackupMode::copies).enabled());
  CHECK_FALSE(BackupOptions{}.set_mode(ata::BackupMode::copies).take_overs());
  CHECK(BackupOptions{}.set_mode(ata::BackupMode::on).take_overs());
  CHECK_FALSE(BackupOptions{}.min_overdue.has_value());  // the driver's default
}

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_exception.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <chrono>
#include <vector>

#include "ata/ata.hpp"

using Catch::Matchers::ContainsSubstring;
using namespace std::chrono_literals;
namespace rt = ata::runtime;

TEST_CASE("a slowdown draws its delays from the model in force in each round",
          "[runtime][slowdown]") {
  const auto base = ata::models::TimeModel::constant(2.0);
  auto slow = rt::Slowdown::sleep(base, 1ms).change_at(10, ata::models::TimeModel::constant(20.0));
  ata::models::Rng rng(1);
  CHECK(slow.draw(1, rng) == 2ms);
  CHECK(slow.draw(9, rng) == 2ms);
  CHECK(slow.draw(10, rng) == 20ms);
  CHECK(slow.draw(1000, rng) == 20ms);
  CHECK(slow.mean_delay(3).count() == 0.002);
  CHECK(slow.model(12).mean() == 20.0);
  CHECK(slow.describe() == "sleep(constant(2) x 1ms, from round 10: constant(20))");

  CHECK(rt::Slowdown::repeat(3).repetitions() == 3);
  CHECK(rt::Slowdown::repeat(3).draw(1, rng) == 0ns);
  CHECK(rt::Slowdown::none().describe() == "none");
  CHECK(rt::Slowdown::burn(base, 50us).describe() == "burn(constant(2) x 50us)");
}

TEST_CASE("a delay is the model's draw in model units", "[runtime][slowdown]") {
  const auto model = ata::models::TimeModel::exponential(3.0);
  const auto slow = rt::Slowdown::sleep(model, 250us);
  ata::models::Rng for_slowdown(7, 1);
  ata::models::Rng for_model(7, 1);
  for (int k = 0; k < 100; ++k) {
    const double units = model.sample(for_model);
    CHECK(slow.draw(1, for_slowdown).count() == static_cast<long>(units * 250'000.0));
  }
}

TEST_CASE("pool options from a scenario describe the simulator's cluster", "[runtime][slowdown]") {
  const auto scenario = ata::models::make_preset("slowdown", 3, /*change_round=*/50);
  const auto options = rt::PoolOptions::from_scenario(scenario, 100us);
  REQUIRE(options.workers() == 3);
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(options.slowdown(i).kind() == rt::Slowdown::Kind::sleep);
    CHECK(options.slowdown(i).unit() == 100us);
    CHECK(options.slowdown(i).model(1).mean() == scenario.means()[i]);
  }
  // Worker 0 turns ten times slower at round 50, as in virtual time.
  CHECK(options.slowdown(0).model(49).mean() == scenario.means()[0]);
  CHECK(options.slowdown(0).model(50).mean() == 10.0 * scenario.means()[0]);
  CHECK(options.slowdown(1).model(50).mean() == scenario.means()[1]);

  const auto burning = rt::PoolOptions::from_scenario(scenario, 1ms, rt::Slowdown::Kind::burn);
  CHECK(burning.slowdown(2).kind() == rt::Slowdown::Kind::burn);
}

TEST_CASE("bad slowdowns and pool options are refused", "[runtime][slowdown][errors]") {
  const auto model = ata::models::TimeModel::exponential(1.0);
  CHECK_THROWS_MATCHES(rt::Slowdown::sleep(model, 0ns), ata::InvalidArgument,
                       Catch::Matchers::MessageMatches(ContainsSubstring("unit > 0 ns, got 0 ns")));
  CHECK_THROWS_AS(rt::Slowdown::burn(model, -1ms), ata::InvalidArgument);
  CHECK_THROWS_MATCHES(rt::Slowdown::repeat(0), ata::InvalidArgument,
                       Catch::Matchers::MessageMatches(ContainsSubstring("times = 0")));
  auto repeat = rt::Slowdown::repeat(2);
  CHECK_THROWS_MATCHES(repeat.change_at(5, model), ata::InvalidArgument,
                       Catch::Matchers::MessageMatches(ContainsSubstring("repeat(2)")));
  CHECK_THROWS_AS(repeat.model(1), ata::Error);
  auto sleep = rt::Slowdown::sleep(model);
  CHECK_THROWS_MATCHES(sleep.change_at(0, model), ata::InvalidArgument,
                       Catch::Matchers::MessageMatches(ContainsSubstring("round >= 1")));

  CHECK_THROWS_MATCHES(rt::PoolOptions(0), ata::InvalidArgument,
                       Catch::Matchers::MessageMatches(ContainsSubstring("at least one worker")));
  rt::PoolOptions options(2);
  CHECK_THROWS_MATCHES(options.set_slowdown(2, sleep), ata::InvalidArgument,
                       Catch::Matchers::MessageMatches(ContainsSubstring("worker index 2")));
  CHECK_THROWS_AS(options.set_cpu(5, 0), ata::InvalidArgument);
  CHECK_THROWS_AS(options.slowdown(2), ata::InvalidArgument);
  CHECK_THROWS_MATCHES(
      options.set_idle_spin(-1ns), ata::InvalidArgument,
      Catch::Matchers::MessageMatches(ContainsSubstring("idle spin must be >= 0 ns, got -1 ns")));
  CHECK_THROWS_AS(rt::PoolOptions::from_scenario(ata::models::make_preset("linear", 2), 1ms,
                                                 rt::Slowdown::Kind::repeat),
                  ata::InvalidArgument);
}

TEST_CASE("delays too long to represent are refused up front or cut to the maximum",
          "[runtime][slowdown][errors]") {
  using ata::models::TimeModel;
  const auto huge = TimeModel::constant(1e308);
  CHECK_THROWS_MATCHES(
      rt::Slowdown::sleep(huge, 1ns), ata::InvalidArgument,
      Catch::Matchers::MessageMatches(ContainsSubstring("constant(1e+308) x 1ns") &&
                                      ContainsSubstring("mean delay of 1e+299 s") &&
                                      ContainsSubstring("above the maximum of 86400 s")));
  CHECK_THROWS_AS(rt::Slowdown::burn(huge, 1ms), ata::InvalidArgument);
  CHECK_THROWS_MATCHES(
      rt::Slowdown::sleep(TimeModel::constant(1.0), std::chrono::nanoseconds::max()),
      ata::InvalidArgument,
      Catch::Matchers::MessageMatches(ContainsSubstring("mean delay of 9.22e+09 s")));
  auto changing = rt::Slowdown::sleep(TimeModel::constant(1.0), 1ms);
  CHECK_THROWS_AS(changing.change_at(5, huge), ata::InvalidArgument);
  CHECK(changing.model(5).mean() == 1.0);  // unchanged by the refusal
  // The bound itself: a mean delay of one day is allowed.
  ata::models::Rng rng(5);
  CHECK(rt::Slowdown::sleep(TimeModel::constant(86'400.0), 1s).draw(1, rng) ==
        rt::Slowdown::kMaxDelay);
  CHECK_THROWS_AS(rt::Slowdown::sleep(TimeModel::constant(86'401.0), 1s), ata::InvalidArgument);

  // Half the draws of this mixture (mean 0.87 days) are 1.7 days: cut to one day, never
  // wrapped around to a negative or zero delay.
  const auto tail =
      TimeModel::mixture({0.5, 0.5}, {TimeModel::constant(0.0), TimeModel::constant(150'000.0)});
  const auto slow = rt::Slowdown::sleep(tail, 1s);
  int cut = 0;
  for (int k = 0; k < 100; ++k) {
    const auto delay = slow.draw(1, rng);
    CHECK((delay == 0ns || delay == rt::Slowdown::kMaxDelay));
    cut += delay == rt::Slowdown::kMaxDelay ? 1 : 0;
  }
  CHECK(cut > 20);
  CHECK(cut < 80);

  // A scenario's worker with such a model is named in the refusal.
  const ata::models::Scenario scenario("huge", {TimeModel::constant(1.0), huge});
  CHECK_THROWS_MATCHES(rt::PoolOptions::from_scenario(scenario, 1us), ata::InvalidArgument,
                       Catch::Matchers::MessageMatches(
                           ContainsSubstring("worker 1 of scenario 'huge': a sleep slowdown")));
}

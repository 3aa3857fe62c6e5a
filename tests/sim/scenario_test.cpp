#include "ata/sim/scenario.hpp"

#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "ata/core/error.hpp"

using Catch::Approx;
using Catch::Matchers::ContainsSubstring;

TEST_CASE("paper presets have the paper's means", "[sim][scenario]") {
  const auto cifar = ata::sim::make_preset("cifar", 51);
  CHECK(cifar.workers() == 51);
  CHECK(cifar.means().front() == Approx(58.0));
  CHECK(cifar.max_mean() == Approx(58.0 * 51));
  const auto sqrt = ata::sim::make_preset("sqrt", 17);
  CHECK(sqrt.means()[3] == Approx(58.0 * 2.0));  // i = 4
  CHECK(ata::sim::make_preset("log", 3).means()[0] == Approx(58.0 * std::log(2.0)));
  CHECK(ata::sim::make_preset("quadratic", 3).means()[2] == Approx(58.0 * 9.0));
  const auto linear = ata::sim::make_preset("linear", 4).means();  // cifar is the linear law
  const auto cifar_means = cifar.means();
  CHECK(std::vector<double>(cifar_means.begin(), cifar_means.begin() + 4) == linear);

  const auto mixture = ata::sim::make_preset("mixture", 10);
  for (std::size_t i = 0; i < 5; ++i) CHECK(mixture.means()[i] == Approx(58.0));
  for (std::size_t i = 5; i < 10; ++i) CHECK(mixture.means()[i] == Approx(116.0));
  CHECK(mixture.models()[0].kind() != mixture.models()[1].kind());

  const auto slowdown = ata::sim::make_preset("slowdown", 5, 100);
  REQUIRE(slowdown.changes().size() == 1);
  CHECK(slowdown.changes()[0].round == 100);
  CHECK(slowdown.changes()[0].worker == 0);
  CHECK(slowdown.changes()[0].model.mean() == Approx(10.0 * slowdown.means()[0]));
}

TEST_CASE("custom scenarios load from JSON", "[sim][scenario]") {
  const auto s = ata::sim::parse_scenario(R"({
    "name": "lab",
    "workers": [
      {"count": 3, "model": "exponential", "mean": 2.0},
      {"model": "shifted_exponential", "shift": 1, "mean": 1, "outage": {"probability": 0.5, "timeout": 4}},
      {"model": "mixture", "components": [{"weight": 3, "model": "constant", "value": 1},
                                          {"weight": 1, "model": "uniform", "low": 0, "high": 10}]}
    ],
    "changes": [{"round": 7, "worker": 4, "model": "gamma", "shape": 2, "scale": 1}]
  })", "lab.json");
  CHECK(s.name() == "lab");
  REQUIRE(s.workers() == 5);
  CHECK(s.means()[2] == Approx(2.0));
  CHECK(s.means()[3] == Approx(2.0 + 4.0));  // 1 + 1 + 4 * 0.5 / 0.5
  CHECK(s.means()[4] == Approx(0.75 * 1.0 + 0.25 * 5.0));
  REQUIRE(s.changes().size() == 1);
  CHECK(s.changes()[0].model.mean() == Approx(2.0));

  const auto path = std::filesystem::temp_directory_path() / "ata_scenario_test.json";
  std::ofstream(path) << R"({"workers": [{"model": "constant", "value": 1.5, "count": 2}]})";
  const auto loaded = ata::sim::load_scenario(path.string());
  CHECK(loaded.workers() == 2);
  CHECK(loaded.name() == path.string());
  std::filesystem::remove(path);
}

TEST_CASE("broken scenarios fail with the place and the reason", "[sim][scenario][errors]") {
  const auto fails = [](const char* text, const char* expected) {
    INFO(text);
    REQUIRE_THROWS_WITH(ata::sim::parse_scenario(text, "bad.json"),
                        ContainsSubstring("bad.json") && ContainsSubstring(expected));
  };
  fails("{", "invalid JSON");
  fails("[]", "expected an object");
  fails(R"({"nodes": []})", "unknown key \"nodes\"");
  fails(R"({"workers": 3})", "missing \"workers\"");
  fails(R"({"workers": []})", "no workers");
  fails(R"({"workers": [{"model": "expo", "mean": 1}]})", "workers[0]: unknown model \"expo\"");
  fails(R"({"workers": [{"mean": 1}]})", "missing \"model\"");
  fails(R"({"workers": [{"model": "exponential"}]})", "missing \"mean\"");
  fails(R"({"workers": [{"model": "exponential", "mean": "fast"}]})", "must be a number");
  fails(R"({"workers": [{"model": "exponential", "mean": -1}]})", "workers[0]: exponential mean");
  fails(R"({"workers": [{"model": "exponential", "mean": 1, "meen": 2}]})", "unknown key \"meen\"");
  fails(R"({"workers": [{"model": "exponential", "mean": 1, "count": -2}]})", "whole number");
  fails(R"({"workers": [{"model": "exponential", "mean": 1, "outage": {"probability": 2, "timeout": 1}}]})",
        "outage probability");
  fails(R"({"workers": [{"model": "mixture"}]})", "needs \"components\"");
  fails(R"({"workers": [{"model": "mixture", "components": [{"model": "pareto", "scale": 1, "shape": 0.5}]}]})",
        "workers[0].components[0]");
  fails(R"({"workers": [{"model": "constant", "value": 1}], "changes": [{"round": 2, "worker": 1, "model": "constant", "value": 1}]})",
        "changes[0]: worker 1 is out of range");
  fails(R"({"workers": [{"model": "constant", "value": 1}], "changes": [{"worker": 0, "model": "constant", "value": 1}]})",
        "round");

  REQUIRE_THROWS_WITH(ata::sim::load_scenario("/nonexistent/cluster.json"),
                      ContainsSubstring("cannot read scenario file '/nonexistent/cluster.json'"));
  REQUIRE_THROWS_WITH(ata::sim::make_preset("cifar10", 5),
                      ContainsSubstring("unknown scenario 'cifar10'") && ContainsSubstring("sqrt"));
  REQUIRE_THROWS_WITH(ata::sim::make_preset("sqrt", 0), ContainsSubstring("at least one worker"));
}

#include "ata/models/scenario.hpp"

#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <string_view>
#include <fstream>

#include "ata/core/error.hpp"

using Catch::Approx;
using Catch::Matchers::ContainsSubstring;

TEST_CASE("paper presets have the paper's means", "[models][scenario]") {
  const auto cifar = ata::models::make_preset("cifar", 51);
  CHECK(cifar.workers() == 51);
  CHECK(cifar.means().front() == Approx(58.0));
  CHECK(cifar.max_mean() == Approx(58.0 * 51));
  const auto sqrt = ata::models::make_preset("sqrt", 17);
  CHECK(sqrt.means()[3] == Approx(58.0 * 2.0));  // i = 4
  CHECK(ata::models::make_preset("log", 3).means()[0] == Approx(58.0 * std::log(2.0)));
  CHECK(ata::models::make_preset("quadratic", 3).means()[2] == Approx(58.0 * 9.0));
  const auto linear = ata::models::make_preset("linear", 4).means();  // cifar is the linear law
  const auto cifar_means = cifar.means();
  CHECK(std::vector<double>(cifar_means.begin(), cifar_means.begin() + 4) == linear);

  const auto mixture = ata::models::make_preset("mixture", 10);
  for (std::size_t i = 0; i < 5; ++i) CHECK(mixture.means()[i] == Approx(58.0));
  for (std::size_t i = 5; i < 10; ++i) CHECK(mixture.means()[i] == Approx(116.0));
  CHECK(mixture.models()[0].kind() != mixture.models()[1].kind());

  const auto slowdown = ata::models::make_preset("slowdown", 5, 100);
  REQUIRE(slowdown.changes().size() == 1);
  CHECK(slowdown.changes()[0].round == 100);
  CHECK(slowdown.changes()[0].worker == 0);
  CHECK(slowdown.changes()[0].model.mean() == Approx(10.0 * slowdown.means()[0]));
}

TEST_CASE("custom scenarios load from JSON", "[models][scenario]") {
  const auto s = ata::models::parse_scenario(R"({
    "name": "lab",
    "workers": [
      {"count": 3, "model": "exponential", "mean": 2.0},
      {"model": "shifted_exponential", "shift": 1, "mean": 1, "outage": {"probability": 0.5, "timeout": 4}},
      {"model": "mixture", "components": [{"weight": 0.75, "model": "constant", "value": 1},
                                          {"weight": 0.25, "model": "uniform", "low": 0, "high": 10}]}
    ],
    "changes": [{"round": 7, "worker": 4, "model": "gamma", "shape": 2, "scale": 1}]
  })",
                                          "lab.json");
  CHECK(s.name() == "lab");
  REQUIRE(s.workers() == 5);
  CHECK(s.means()[2] == Approx(2.0));
  CHECK(s.means()[3] == Approx(2.0 + 4.0));  // 1 + 1 + 4 * 0.5 / 0.5
  CHECK(s.means()[4] == Approx(0.75 * 1.0 + 0.25 * 5.0));
  REQUIRE(s.changes().size() == 1);
  CHECK(s.changes()[0].model.mean() == Approx(2.0));

  const auto path = std::filesystem::temp_directory_path() / "ata_scenario_test.json";
  std::ofstream(path) << R"({"workers": [{"model": "constant", "value": 1.5, "count": 2}]})";
  const auto loaded = ata::models::load_scenario(path.string());
  CHECK(loaded.workers() == 2);
  CHECK(loaded.name() == path.string());
  std::filesystem::remove(path);
}

TEST_CASE("broken scenarios fail with the place and the reason", "[models][scenario][errors]") {
  const auto fails = [](const char* text, const char* expected) {
    INFO(text);
    REQUIRE_THROWS_WITH(ata::models::parse_scenario(text, "bad.json"),
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
  fails(
      R"({"workers": [{"model": "mixture", "components": [{"model": "pareto", "scale": 1, "shape": 0.5, "weight": 1}]}]})",
      "workers[0].components[0]");
  fails(R"({"workers": [{"model": "constant", "value": 1}], "changes": [{"round": 2, "worker": 1, "model": "constant", "value": 1}]})",
        "changes[0]: worker 1 is out of range");
  fails(
      R"({"workers": [{"model": "constant", "value": 1}], "changes": [{"worker": 0, "model": "constant", "value": 1}]})",
      "changes[0]: missing \"round\"");

  REQUIRE_THROWS_WITH(ata::models::load_scenario("/nonexistent/cluster.json"),
                      ContainsSubstring("cannot read scenario file '/nonexistent/cluster.json'"));
  REQUIRE_THROWS_WITH(ata::models::make_preset("cifar10", 5),
                      ContainsSubstring("unknown scenario 'cifar10'") && ContainsSubstring("sqrt"));
  REQUIRE_THROWS_WITH(ata::models::make_preset("sqrt", 0),
                      ContainsSubstring("at least one worker"));
}

namespace {

// `count` copies of `unit`.
std::string repeated(std::string_view unit, std::size_t count) {
  std::string out;
  out.reserve(unit.size() * count);
  for (std::size_t i = 0; i < count; ++i) out += unit;
  return out;
}

// A worker that is `depth` mixtures, each of one component, around a constant.
std::string nested_mixture(std::size_t depth) {
  return R"({"workers": [{)" +
         repeated(R"("model": "mixture", "components": [{"weight": 1, )", depth) +
         R"("model": "constant", "value": 1)" + repeated("}]", depth) + "}]}";
}

std::string message_of(std::string_view text) {
  try {
    (void)ata::models::parse_scenario(text, "bad.json");
  } catch (const ata::InvalidArgument& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace

TEST_CASE("scenario files cannot nest without bound", "[models][scenario][errors]") {
  // 10^6 arrays (2 MB) and 10^5 mixtures (5 MB) used to overflow the stack; 10^4 mixtures took
  // 1.3 GB. The first pass stops at the 65th level, before any tree is built.
  const std::string arrays =
      R"({"workers": )" + repeated("[", 1'000'000) + repeated("]", 1'000'000) + "}";
  CHECK_THAT(message_of(arrays), ContainsSubstring("nested deeper than 64 arrays and objects") &&
                                     ContainsSubstring("workers[0][0][0]"));
  CHECK_THAT(message_of(nested_mixture(100'000)), ContainsSubstring("nested deeper than 64"));
  // Within the JSON limit, mixtures have their own.
  CHECK_THAT(message_of(nested_mixture(ata::models::kMaxMixtureDepth + 1)),
             ContainsSubstring("mixtures nested deeper than 16 levels"));
  CHECK(ata::models::parse_scenario(nested_mixture(ata::models::kMaxMixtureDepth), "deep.json")
            .means()[0] == 1.0);
  // The limit itself: 64 levels parse (and then fail for what they are), 65 do not.
  CHECK_THAT(message_of(repeated("[", 64) + repeated("]", 64)),
             ContainsSubstring("top level: expected an object"));
  CHECK_THAT(message_of(repeated("[", 65) + repeated("]", 65)),
             ContainsSubstring("nested deeper than 64"));
}

TEST_CASE("scenario files are read strictly: no key ignored, repeated or out of place",
          "[models][scenario][errors]") {
  const auto fails = [](const std::string& text, const std::string& expected) {
    INFO(text);
    CHECK_THAT(message_of(text), ContainsSubstring("bad.json") && ContainsSubstring(expected));
  };
  const std::string one = R"({"model": "constant", "value": 1})";
  fails(R"({"workers": [{"model": "exponential", "mean": 1, "mean": 2}]})",
        R"(workers[0]: repeated key "mean")");
  fails(R"({"workers": [], "workers": [{"model": "constant", "value": 1}]})",
        R"(top level: repeated key "workers")");
  fails(
      R"({"workers": [{"model": "constant", "value": 1, "outage": {"probability": 0.1, "timeout": 1, "timeout": 2}}]})",
      R"(workers[0].outage: repeated key "timeout")");
  fails(
      R"({"workers": [{"model": "constant", "value": 1, "outage": {"probabilty": 0.1, "timeout": 1}}]})",
      R"(workers[0].outage: unknown key "probabilty")");
  fails(R"({"workers": [{"model": "constant", "value": 1, "weight": 0.5}]})",
        "\"weight\" belongs to a mixture component");
  fails(R"({"workers": [{"model": "constant", "value": 1, "round": 3}]})",
        "\"round\" belongs to an entry of \"changes\"");
  fails(R"({"workers": [{"model": "constant", "value": 1, "worker": 0}]})",
        "\"worker\" belongs to an entry of \"changes\"");
  fails(
      R"({"workers": [{"model": "mixture", "components": [{"model": "constant", "value": 1, "weight": 1, "count": 2}]}]})",
      "workers[0].components[0]: \"count\" belongs to an entry of \"workers\"");
  fails(R"({"workers": [)" + one +
            R"(], "changes": [{"round": 2, "model": "constant", "value": 1}]})",
        "changes[0]: missing \"worker\"");
  fails(
      R"({"workers": [)" + one +
          R"(], "changes": [{"round": 2, "worker": 0, "count": 2, "model": "constant", "value": 1}]})",
      "changes[0]: \"count\" belongs to an entry of \"workers\"");
  fails(R"({"workers": [)" + one +
            R"(], "changes": [{"round": 1.5, "worker": 0, "model": "constant", "value": 1}]})",
        "\"round\" must be a whole number >= 0, got 1.5");
  fails(R"({"workers": [{"model": "constant", "value": 1, "count": 18446744073709551616}]})",
        "\"count\" must be a whole number >= 0, got 1.8446744073709552e+19");
  fails(R"({"name": 5, "workers": [)" + one + "]}", "name: must be a string");
  fails(R"({"name": "a\u001b[31mred", "workers": [)" + one + "]}", "name: must be a string");
  // Weights are probabilities: no silent renormalisation.
  fails(
      R"({"workers": [{"model": "mixture", "components": [{"weight": 0.5, "model": "constant", "value": 1},
                                                             {"weight": 0.4, "model": "constant", "value": 2}]}]})",
      "workers[0]: the mixture's weights must sum to 1, got 0.9");
  fails(R"({"workers": [{"model": "mixture", "components": [{"model": "constant", "value": 1}]}]})",
        "workers[0].components[0]: missing \"weight\"");
  fails(
      R"({"workers": [{"model": "mixture", "components": [{"weight": 3, "model": "constant", "value": 1}]}]})",
      "\"weight\" must be in [0, 1], got 3");
  fails(R"({"workers": [{"model": "mixture", "components": []}]})", "non-empty array");
  const auto thirds = ata::models::parse_scenario(
      R"({"workers": [{"model": "mixture", "components": [{"weight": 0.333333, "model": "constant", "value": 3},
                                                         {"weight": 0.333333, "model": "constant", "value": 3},
                                                         {"weight": 0.333334, "model": "constant", "value": 3}]}]})",
      "thirds.json");
  CHECK(thirds.means()[0] == Approx(3.0));
  CHECK_THAT(
      message_of(
          R"({"workers": [{"model": "mixture", "components": [{"weight": 0.333333, "model": "constant", "value": 3},
                                                         {"weight": 0.333333, "model": "constant", "value": 3}]}]})"),
      ContainsSubstring("got 0.666666"));
}

TEST_CASE("scenario sizes are bounded before anything is allocated", "[models][scenario][errors]") {
  CHECK_THAT(
      message_of(
          R"({"workers": [{"model": "constant", "value": 1, "count": 1000000000000000000}]})"),
      ContainsSubstring(
          "workers[0]: \"count\" 1000000000000000000 makes more than 100000 workers"));
  CHECK_THAT(message_of(R"({"workers": [{"model": "constant", "value": 1, "count": 60000},
                                        {"model": "constant", "value": 2, "count": 40001}]})"),
             ContainsSubstring("workers[1]: \"count\" 40001 makes more than 100000 workers"));
  CHECK(ata::models::parse_scenario(
            R"({"workers": [{"model": "constant", "value": 1, "count": 100000}]})", "max.json")
            .workers() == ata::models::Scenario::kMaxWorkers);
  REQUIRE_THROWS_WITH(ata::models::make_preset("sqrt", ata::models::Scenario::kMaxWorkers + 1),
                      ContainsSubstring("at most 100000 workers, got 100001"));
  CHECK_THAT(
      message_of(R"({"workers": [{"model": "constant", "value": 1,
                                         "outage": {"probability": 0.999999999, "timeout": 1}}]})"),
      ContainsSubstring("workers[0]: outage probability must be in [0, 0.999], got 0.999999999"));
}

TEST_CASE("scenario errors quote input short and escaped", "[models][scenario][errors]") {
  const auto printable_and_short = [](const std::string& message) {
    INFO(message);
    CHECK(message.size() < 400);
    CHECK(
        std::all_of(message.begin(), message.end(), [](char c) { return c >= 0x20 && c < 0x7f; }));
  };
  std::string binary =
      "\x7f"
      "ELF\x02\x01\x01";
  binary += std::string(3, '\0') + "\xff\xfe\x80";
  const auto garbage = message_of(binary);
  CHECK_THAT(garbage, ContainsSubstring("invalid JSON: parse error at line 1, column 1") &&
                          ContainsSubstring("\\x7f"));
  CHECK_THAT(garbage, !ContainsSubstring("json.exception"));
  printable_and_short(garbage);
  printable_and_short(
      message_of("\"" + std::string(1'000'000, 'a')));  // an unterminated 1 MB string
  printable_and_short(
      message_of(R"({"workers": [{"model": ")" + std::string(100'000, 'x') + R"("}]})"));
  printable_and_short(message_of(R"({"workers": [{"model": "constant", "value": [)" +
                                 repeated("1,", 100'000) + "1]}]})"));
  printable_and_short(message_of(R"({"workers": [{"model": "constant", "value": 1, ")" +
                                 std::string(10'000, '\x01') + R"(": 1}]})"));
}

TEST_CASE("scenario files that cannot be read say why", "[models][scenario][errors]") {
  const auto folder = std::filesystem::temp_directory_path();
  REQUIRE_THROWS_WITH(
      ata::models::load_scenario(folder.string()),
      ContainsSubstring("cannot read scenario file '" + folder.string() + "': it is a folder"));
  REQUIRE_THROWS_WITH(ata::models::load_scenario("/dev/zero"),
                      ContainsSubstring("'/dev/zero': larger than the limit of 16 MiB"));
  REQUIRE_THROWS_WITH(ata::models::load_scenario("/nonexistent/cluster.json"),
                      ContainsSubstring("'/nonexistent/cluster.json': No such file or directory"));
}

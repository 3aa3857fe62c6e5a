// The apps' command lines, parsed without running anything (what the fuzzers call).
#include <sched.h>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <vector>

#include "app_support.hpp"
#include "sim_options.hpp"
#include "training_options.hpp"

using Catch::Matchers::ContainsSubstring;

namespace {

std::vector<const char*> argv_of(const char* program, std::initializer_list<const char*> args) {
  std::vector<const char*> argv{program};
  argv.insert(argv.end(), args);
  return argv;
}

ata::apps::SimOptions sim(std::initializer_list<const char*> args) {
  const auto argv = argv_of("ata-sim", args);
  const auto parsed = ata::apps::parse_sim_options(static_cast<int>(argv.size()), argv.data());
  REQUIRE_FALSE(parsed.help);
  return parsed.options;
}

std::string sim_error(std::initializer_list<const char*> args) {
  const auto argv = argv_of("ata-sim", args);
  try {
    (void)ata::apps::parse_sim_options(static_cast<int>(argv.size()), argv.data());
  } catch (const ata::apps::UsageError& e) {
    return e.what();
  }
  return "(accepted)";
}

std::string training_error(ata::ml::Method method, std::initializer_list<const char*> args) {
  const auto argv = argv_of("ata-sgd", args);
  try {
    (void)ata::ml::parse_training_options(static_cast<int>(argv.size()), argv.data(), method);
  } catch (const ata::apps::UsageError& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace

TEST_CASE("ata-sim's command line parses into options", "[apps][cli]") {
  const auto defaults = sim({});
  CHECK(defaults.batch == 23);
  CHECK(defaults.strategies ==
        std::vector<std::string>{"gta", "ofta", "uta", "ata", "ata-e", "eofta", "frontier"});
  const auto o = sim({"--strategies", "ata-e,ata,ata-e", "--rounds", "010", "--seed",
                      "18446744073709551615", "--json", "out.json"});
  CHECK(o.strategies ==
        std::vector<std::string>{"ata-e", "ata", "ofta", "eofta", "frontier", "gta"});  // yardsticks once
  CHECK(o.rounds == 10);  // decimal, although CLI11 alone reads a leading 0 as octal
  CHECK(o.seed == 18446744073709551615u);
  CHECK(o.json_path == "out.json");
  CHECK(defaults.frontier_probe_rounds == 200);
  CHECK(sim({"--frontier-probe-rounds", "7"}).frontier_probe_rounds == 7);
  CHECK(sim({"--strategies", "frontier"}).strategies ==
        std::vector<std::string>{"frontier", "ofta", "eofta", "gta"});
  CHECK_THAT(sim_error({"--frontier-probe-rounds", "0"}),
             ContainsSubstring("--frontier-probe-rounds: must be a whole number from 1 to 1000000000, got '0'"));
  CHECK_THAT(sim_error({"--frontier-probe-rounds", "x"}), ContainsSubstring("--frontier-probe-rounds"));
  CHECK(defaults.backups == "copies");
  CHECK(defaults.backup_threshold == 4.0);
  CHECK(defaults.backup_copies == 2);
  const auto b = sim({"--backups", "copies", "--backup-threshold", "2.5", "--backup-copies", "3"});
  CHECK(b.backups == "copies");
  CHECK(b.backup_threshold == 2.5);
  CHECK(b.backup_copies == 3);
  const auto argv = argv_of("ata-sim", {"--help"});
  const auto help = ata::apps::parse_sim_options(static_cast<int>(argv.size()), argv.data()).help;
  REQUIRE(help);
  CHECK_THAT(*help, ContainsSubstring("--strategies"));
  CHECK_THAT(*help, ContainsSubstring("--work-price"));
  CHECK_FALSE(defaults.work_price);  // 1/n
  CHECK(sim({"--work-price", "0"}).work_price == 0.0);
  CHECK(sim({"--work-price", "2.5e-3"}).work_price == 2.5e-3);
}

TEST_CASE("the work price (--work-price) is a finite number >= 0 in every app that takes it", "[apps][cli][errors]") {
  using ata::ml::Method;
  for (const char* bad : {"-1", "inf", "nan", "1e400", "abc", "", "0x1p3", "-0.5"}) {
    const std::string expected = std::string("--work-price: must be a number >= 0, got '") + bad + "'";
    CHECK_THAT(sim_error({"--work-price", bad}), ContainsSubstring(expected));
    CHECK_THAT(training_error(Method::sgd, {"--work-price", bad}), ContainsSubstring(expected));
    CHECK_THAT(training_error(Method::prox, {"--work-price", bad}), ContainsSubstring(expected));
  }
  const auto argv = argv_of("ata-sgd", {"--work-price", "0.25"});
  const auto parsed =
      ata::ml::parse_training_options(static_cast<int>(argv.size()), argv.data(), Method::sgd);
  CHECK(parsed.options.work_price == 0.25);
}

TEST_CASE("ata-sim's command line refuses what it cannot use, naming flag and value",
          "[apps][cli][errors]") {
  CHECK_THAT(
      sim_error({"--rounds", "18446744073709551616"}),
      ContainsSubstring(
          "--rounds: must be a whole number from 1 to 1000000000, got '18446744073709551616'"));
  CHECK_THAT(sim_error({"--seed", "18446744073709551616"}),
             ContainsSubstring("--seed: must be a whole number >= 0, got '18446744073709551616'"));
  CHECK_THAT(sim_error({"--batch", "0x10"}),
             ContainsSubstring("--batch: must be a whole number from 1 to 1000000000, got '0x10'"));
  CHECK_THAT(sim_error({"--batch", "+5"}), ContainsSubstring("got '+5'"));
  CHECK_THAT(sim_error({"--batch", "1e3"}), ContainsSubstring("got '1e3'"));
  CHECK_THAT(sim_error({"--workers", "100001"}),
             ContainsSubstring("--workers: must be a whole number from 1 to 100000"));
  CHECK_THAT(sim_error({"--dim", "4294967296"}),
             ContainsSubstring("--dim: must be a whole number from 1 to 1000000"));
  CHECK_THAT(sim_error({"--step", "2"}),
             ContainsSubstring("--step: must be a number in (0, 2), got '2'"));
  CHECK_THAT(sim_error({"--step", "0x1p-3"}), ContainsSubstring("got '0x1p-3'"));
  CHECK_THAT(sim_error({"--alpha", "inf"}),
             ContainsSubstring("--alpha: must be a number > 0, got 'inf'"));
  CHECK_THAT(sim_error({"--noise", "1e400"}),
             ContainsSubstring("--noise: must be a number >= 0, got '1e400'"));
  CHECK_THAT(sim_error({"--json", ""}), ContainsSubstring("--json: must not be empty"));
  CHECK_THAT(sim_error({"--plot", ""}), ContainsSubstring("--plot: must not be empty"));
  CHECK_THAT(
      sim_error({"--strategies", ",", "--rounds", "5"}),
      ContainsSubstring("--strategies: empty item in ','") && !ContainsSubstring("--rounds'"));
  CHECK_THAT(sim_error({"--strategies", "ata,,gta"}),
             ContainsSubstring("empty item in 'ata,,gta'"));
  CHECK_THAT(sim_error({"--strategies", "ata,fast"}),
             ContainsSubstring("unknown strategy 'fast'; expected one of"));
  CHECK_THAT(sim_error({"--strategies", "ata\x1b[2J"}),
             ContainsSubstring("unknown strategy 'ata\\x1b[2J'"));
  CHECK_THAT(sim_error({"--bogus"}), ContainsSubstring("--bogus"));
  const char* no_program[] = {nullptr};
  REQUIRE_THROWS_AS(ata::apps::parse_sim_options(0, no_program), ata::apps::UsageError);
}

TEST_CASE("ata-sgd's and ata-prox's command lines refuse what they cannot use",
          "[apps][cli][errors]") {
  using ata::ml::Method;
  CHECK_THAT(training_error(Method::sgd, {"--workers", "5000"}),
             ContainsSubstring("--workers: must be a whole number from 1 to 1024, got '5000'"));
  CHECK_THAT(training_error(Method::sgd, {"--batch", "1000000000"}),
             ContainsSubstring("--batch: must be a whole number from 1 to 1000000"));
  CHECK_THAT(training_error(Method::sgd, {"--dim", "18446744073709551616"}),
             ContainsSubstring("--dim: must be a whole number from 1 to 134217728"));
  CHECK_THAT(training_error(Method::sgd, {"--unit-us", "1e308"}),
             ContainsSubstring("--unit-us: must be a number in [0.001, 1e+06], got '1e308'"));
  CHECK_THAT(training_error(Method::sgd, {"--target-gap", "1"}),
             ContainsSubstring("--target-gap: must be a number in (0, 1)"));
  CHECK_THAT(training_error(Method::sgd, {"--problem", "svm"}),
             ContainsSubstring("unknown problem 'svm'"));
  CHECK_THAT(training_error(Method::prox, {"--problem", "quadratic"}),
             ContainsSubstring("quadratic has no prox"));
  CHECK_THAT(training_error(Method::sgd, {"--problem", "quadratic", "--data", "x.svm"}),
             ContainsSubstring("--data does not apply to --problem quadratic"));
  CHECK_THAT(training_error(Method::sgd, {"--data", ""}),
             ContainsSubstring("--data: must not be empty"));
  CHECK_THAT(training_error(Method::sgd, {"--strategies", "ata,"}),
             ContainsSubstring("--strategies: empty item"));
  CHECK_THAT(training_error(Method::prox, {"--backups", "maybe"}),
             ContainsSubstring("--backups: backups must be off, copies or on, got 'maybe'"));
  CHECK(training_error(Method::sgd, {"--backups", "copies"}) == "(accepted)");
  CHECK(training_error(Method::sgd, {"--problem", "quadratic", "--dim", "1000"}) == "(accepted)");
}

TEST_CASE("ata-sgd's and ata-prox's stream flags refuse what they cannot use",
          "[apps][cli][errors][async]") {
  using ata::ml::Method;
  for (const auto method : {Method::sgd, Method::prox}) {
    CHECK_THAT(training_error(method, {"--strategies", "ringmaster-ata"}),
               ContainsSubstring("--delay-threshold: required by the ringmaster strategies"));
    CHECK_THAT(training_error(method, {"--strategies", "ringmaster", "--delay-threshold", "0"}),
               ContainsSubstring("--delay-threshold: must be a whole number from 1 to 1000000000, got '0'"));
    CHECK_THAT(training_error(method, {"--strategies", "ringmaster", "--delay-threshold", "4",
                                       "--stops", "maybe"}),
               ContainsSubstring("--stops: maybe not in {on,off}"));
    CHECK_THAT(training_error(method, {"--strategies", "ringmaster", "--delay-threshold", "4",
                                       "--stream-step", "0"}),
               ContainsSubstring("--stream-step: must be a number > 0, got '0'"));
    CHECK_THAT(training_error(method, {"--strategies", "ringmaster", "--delay-threshold", "4",
                                       "--stream-gradients", "0"}),
               ContainsSubstring("--stream-gradients: must be a whole number from 1 to 1000000000000, got '0'"));
    CHECK_THAT(training_error(method, {"--strategies", "ofta", "--stops", "off"}),
               ContainsSubstring("--stops: applies to the ringmaster strategies only"));
    CHECK_THAT(training_error(method, {"--delay-threshold", "4"}),
               ContainsSubstring("--delay-threshold: applies to the ringmaster strategies only"));
    CHECK_THAT(training_error(method, {"--strategies", "ringmaster:3", "--delay-threshold", "4"}),
               ContainsSubstring("ringmaster:3"));
  }
}

namespace {

// The first CPU this process may use, as --cpus spells it.
std::string usable_cpu() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  REQUIRE(sched_getaffinity(0, sizeof allowed, &allowed) == 0);
  unsigned cpu = 0;
  while (!CPU_ISSET(cpu, &allowed)) ++cpu;
  return std::to_string(cpu);
}

ata::ml::TrainingOptions training(std::initializer_list<const char*> args) {
  const auto argv = argv_of("ata-sgd", args);
  const auto parsed = ata::ml::parse_training_options(static_cast<int>(argv.size()), argv.data(),
                                                      ata::ml::Method::sgd);
  REQUIRE_FALSE(parsed.help);
  return parsed.options;
}

}  // namespace

TEST_CASE("ata-sgd's stream flags parse into options", "[apps][cli][async]") {
  const auto o = training({"--strategies", "ringmaster-ata,ringmaster", "--delay-threshold", "8",
                           "--stops", "off", "--stream-step", "0.01", "--stream-gradients", "500"});
  CHECK(o.strategies == std::vector<std::string>{"ringmaster-ata", "ringmaster", "ofta", "gta"});
  CHECK(o.delay_threshold == 8);
  CHECK(o.stops == "off");
  CHECK(o.stream_step == 0.01);
  CHECK(o.stream_gradients == 500);
  const auto defaults = training({"--strategies", "ringmaster", "--delay-threshold", "2"});
  CHECK(defaults.stops == "on");
  CHECK_FALSE(defaults.stream_step.has_value());
  CHECK(defaults.stream_gradients == 0);
}

TEST_CASE("ata-sgd's lanes, CPUs and work factors parse into options", "[apps][cli][lanes]") {
  const auto defaults = training({});
  CHECK(defaults.lanes == ata::ml::LaneKind::threads);
  CHECK(defaults.scenario == "cifar");
  CHECK(defaults.cpus.empty());
  CHECK(defaults.calibration_tasks == 0);
  // The lists set the worker count and, without --scenario, mean no simulated delay.
  const std::string cpu = usable_cpu();
  const std::string three = cpu + ",0" + cpu + "," + cpu;  // leading zeros read as decimal
  const std::string two = cpu + "," + cpu;
  const auto o = training({"--lanes", "tbb", "--cpus", three.c_str(), "--work-factors", "1,2,010"});
  CHECK(o.lanes == ata::ml::LaneKind::tbb);
  CHECK(o.workers == 3);
  CHECK(o.scenario == "none");
  const auto n = static_cast<unsigned>(std::stoul(cpu));
  CHECK(o.cpus == std::vector<unsigned>{n, n, n});
  CHECK(o.work_factors == std::vector<std::size_t>{1, 2, 10});
  const auto pinned = training({"--lanes", "asio", "--cpus", two.c_str(), "--scenario", "sqrt"});
  CHECK(pinned.lanes == ata::ml::LaneKind::asio);
  CHECK(pinned.scenario == "sqrt");  // simulated delays on pinned workers
  CHECK(pinned.workers == 2);
  CHECK(training({"--calibration-tasks", "50"}).calibration_tasks == 50);
}

TEST_CASE("ata-sgd refuses lanes, CPUs and work factors it cannot use", "[apps][cli][errors]") {
  using ata::ml::Method;
  const std::string cpu = usable_cpu();
  const std::string two = cpu + "," + cpu;
  CHECK_THAT(
      training_error(Method::sgd, {"--lanes", "fibers"}),
      ContainsSubstring("--lanes: unknown lane kind 'fibers'; expected threads, asio or tbb"));
  CHECK_THAT(training_error(Method::sgd, {"--cpus", (cpu + ",x").c_str()}),
             ContainsSubstring("--cpus: item 2 must be a whole number from 0 to 1023, got 'x'"));
  CHECK_THAT(training_error(Method::sgd, {"--cpus", "-1"}),
             ContainsSubstring("--cpus: item 1 must be a whole number from 0 to 1023, got '-1'"));
  CHECK_THAT(training_error(Method::sgd, {"--cpus", (cpu + ",," + cpu).c_str()}),
             ContainsSubstring("--cpus: empty item in '" + cpu + ",," + cpu + "'"));
  CHECK_THAT(training_error(Method::sgd, {"--cpus", ""}), ContainsSubstring("--cpus: empty item"));
  CHECK_THAT(training_error(Method::sgd, {"--cpus", "1023"}),
             ContainsSubstring("--cpus: CPU 1023 is not one this process may use ("));
  CHECK_THAT(training_error(Method::sgd, {"--workers", "4", "--cpus", two.c_str()}),
             ContainsSubstring("--cpus: 2 values for 4 workers; give one per worker"));
  CHECK_THAT(
      training_error(Method::sgd, {"--work-factors", "1,0"}),
      ContainsSubstring("--work-factors: item 2 must be a whole number from 1 to 1000, got '0'"));
  CHECK_THAT(training_error(Method::sgd, {"--work-factors", "1001"}),
             ContainsSubstring("from 1 to 1000, got '1001'"));
  CHECK_THAT(training_error(Method::sgd, {"--cpus", cpu.c_str(), "--work-factors", "1,2"}),
             ContainsSubstring("--work-factors: 2 values for 1 workers; give one per worker"));
  CHECK_THAT(training_error(Method::sgd, {"--work-factors", "1,2", "--scenario", "sqrt"}),
             ContainsSubstring("--work-factors: needs --scenario none, not sqrt"));
  CHECK_THAT(training_error(Method::sgd, {"--scenario", "none", "--burn"}),
             ContainsSubstring("--burn: --scenario none has no delays to burn"));
  CHECK_THAT(training_error(Method::sgd, {"--work-factors", "1,2", "--unit-us", "5"}),
             ContainsSubstring("--unit-us: --scenario none has no delays to scale"));
  CHECK_THAT(training_error(Method::sgd, {"--calibration-tasks", "0"}),
             ContainsSubstring("--calibration-tasks: must be a whole number from 1 to 100000"));
}

TEST_CASE("output paths are checked before a run, with the reason", "[apps][cli][errors]") {
  namespace fs = std::filesystem;
  const fs::path folder = fs::temp_directory_path() / "ata_options_test";
  fs::remove_all(folder);
  fs::create_directories(folder);
  ata::apps::write_file(folder / "plain.txt", "text");
  REQUIRE_THROWS_WITH(ata::apps::check_output_file("--json", folder),
                      ContainsSubstring("is a folder, not a file"));
  REQUIRE_THROWS_WITH(
      ata::apps::check_output_file("--csv", folder / "plain.txt" / "trace.csv"),
      ContainsSubstring("--csv '") && ContainsSubstring("plain.txt' is not a folder"));
  REQUIRE_THROWS_WITH(ata::apps::check_output_folder("--plot", folder / "plain.txt"),
                      ContainsSubstring("plain.txt' is not a folder"));
  REQUIRE_THROWS_WITH(ata::apps::check_output_file("--json", "/proc/forbidden/out.json"),
                      ContainsSubstring("cannot create a file in '/proc'"));
  // Missing folders are fine: they are created when the file is written.
  ata::apps::check_output_file("--json", folder / "new" / "deeper" / "out.json");
  ata::apps::check_output_folder("--plot", folder / "plots");
  CHECK_FALSE(fs::exists(folder / "new"));  // the check itself creates nothing
  ata::apps::write_file(folder / "new" / "deeper" / "out.json", "{}");
  CHECK(fs::file_size(folder / "new" / "deeper" / "out.json") == 2);
  REQUIRE_THROWS_WITH(ata::apps::write_file(folder / "plain.txt" / "x", "{}"),
                      ContainsSubstring("cannot write '") && ContainsSubstring("Not a directory"));
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(folder)) ++entries;
  CHECK(entries == 2);  // plain.txt and new/: no probe or temporary file left behind
  fs::remove_all(folder);
}

// The engine-independent part of a Ringmaster stream: the rule and the three selections that
// sim::RingmasterStream and ata-sgd's TaskStream both ask.
#include "ata/core/ringmaster_workers.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <vector>

#include "ata/core/error.hpp"

using Catch::Matchers::ContainsSubstring;
using ata::RingmasterWorkers;
using ata::StreamSelection;

namespace {

std::vector<std::size_t> as_vector(std::span<const std::size_t> s) { return {s.begin(), s.end()}; }

}  // namespace

TEST_CASE("Ringmaster's rule applies a result iff its delay is below R", "[core][async]") {
  STATIC_REQUIRE(ata::ringmaster_applies(0, 1));
  STATIC_REQUIRE_FALSE(ata::ringmaster_applies(1, 1));
  STATIC_REQUIRE(ata::ringmaster_applies(15, 16));
  STATIC_REQUIRE_FALSE(ata::ringmaster_applies(16, 16));
}

TEST_CASE("the stream strategies' names map to their selections", "[core][async]") {
  REQUIRE(ata::stream_strategy_names().size() == 3);
  CHECK(ata::stream_selection("ringmaster") == StreamSelection::all);
  CHECK(ata::stream_selection("ringmaster-ata") == StreamSelection::learned);
  CHECK(ata::stream_selection("ringmaster-oracle") == StreamSelection::oracle);
  CHECK_FALSE(ata::stream_selection("ringmaster-").has_value());
  CHECK_FALSE(ata::stream_selection("gta").has_value());
}

TEST_CASE("each selection keeps its workers busy", "[core][async]") {
  const std::vector<double> means{1.0, 40.0, 1.0, 1.0, 40.0};
  SECTION("all: every worker, whatever it observes") {
    RingmasterWorkers workers(StreamSelection::all, 5, 4);
    workers.observe(1, 100.0, true);
    CHECK(as_vector(workers.select()) == std::vector<std::size_t>{0, 1, 2, 3, 4});
    CHECK(workers.learned() == nullptr);
  }
  SECTION("oracle: the bound's minimiser of the true means, chosen again when they change") {
    RingmasterWorkers workers(StreamSelection::oracle, 5, 4, means);
    CHECK(as_vector(workers.select()) == ata::ringmaster_fastest(means, 4));
    CHECK(as_vector(workers.select()) == std::vector<std::size_t>{0, 2, 3});
    workers.set_true_means(std::vector<double>{40.0, 1.0, 40.0, 40.0, 1.0});
    CHECK(as_vector(workers.select()) == std::vector<std::size_t>{1, 4});
  }
  SECTION("learned: RingmasterSelection, told of complete and stopped tasks") {
    RingmasterWorkers workers(StreamSelection::learned, 5, 4);
    REQUIRE(workers.learned() != nullptr);
    CHECK(workers.select().size() == 5);  // none observed: every worker is tried
    workers.observe(0, 1.0, false);
    CHECK(workers.learned()->estimated_mean(0) > 0.0);
    CHECK(workers.learned()->estimated_mean(2) == 0.0);  // not observed yet
    workers.observe(1, 3.0, true);
    CHECK(workers.learned()->estimated_mean(1) > 0.0);  // censored time counts
  }
}

TEST_CASE("RingmasterWorkers refuses what it cannot use", "[core][async][errors]") {
  CHECK_THROWS_AS(RingmasterWorkers(StreamSelection::all, 0, 4), ata::InvalidArgument);
  CHECK_THROWS_WITH(RingmasterWorkers(StreamSelection::all, 3, 0),
                    ContainsSubstring("delay threshold R must be >= 1"));
  CHECK_THROWS_WITH(RingmasterWorkers(StreamSelection::oracle, 3, 4),
                    ContainsSubstring("one true mean per worker: 0 for 3 workers"));
  CHECK_THROWS_WITH(RingmasterWorkers(StreamSelection::oracle, 2, 4, std::vector<double>{1.0, -1.0}),
                    ContainsSubstring("mean task time"));
  RingmasterWorkers all(StreamSelection::all, 3, 4);
  CHECK_THROWS_WITH(all.set_true_means(std::vector<double>{1.0, 1.0, 1.0}),
                    ContainsSubstring("only ringmaster-oracle"));
  CHECK_THROWS_AS(all.observe(3, 1.0, false), ata::InvalidArgument);
  RingmasterWorkers learned(StreamSelection::learned, 3, 4);
  CHECK_THROWS_AS(learned.observe(0, -1.0, false), ata::InvalidArgument);
}

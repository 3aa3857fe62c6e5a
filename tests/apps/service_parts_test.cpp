#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <chrono>
#include <stop_token>
#include <vector>

#include "estimate_reply.hpp"
#include "option_pricing.hpp"
#include "service_metrics.hpp"

using Catch::Approx;
using Catch::Matchers::ContainsSubstring;
using namespace std::chrono_literals;
namespace svc = ata::service;

TEST_CASE("Monte Carlo parts pool into the Black-Scholes price", "[service]") {
  const svc::EuropeanCall option;
  CHECK(svc::black_scholes_price(option) == Approx(10.450583572185565).epsilon(1e-12));
  std::vector<svc::PricingPart> parts;
  for (std::uint64_t task = 0; task < 50; ++task) {
    ata::models::Rng rng(3, task);
    parts.push_back(svc::price_paths(option, 4000, rng));
  }
  const auto pooled = svc::combine(parts);
  CHECK(pooled.draws == 200000);
  // The payoff's standard deviation is about 14.7: the standard error about 0.033.
  CHECK(pooled.standard_error == Approx(14.7 / std::sqrt(200000.0)).epsilon(0.1));
  CHECK(std::abs(pooled.price - svc::black_scholes_price(option)) < 4.0 * pooled.standard_error);
  CHECK(svc::combine({}).draws == 0);

  std::stop_source stop;
  stop.request_stop();
  ata::models::Rng rng(3, 0);
  CHECK(svc::price_paths(option, 4000, rng, stop.get_token()).draws == 0);
}

TEST_CASE("the service counts responses, batches and what each worker ran", "[service]") {
  svc::ServiceMetrics metrics(2, {{"strategy", "pull"}});
  metrics.count_response(200);
  metrics.count_response(200);
  metrics.count_response(404);
  metrics.batch_started();
  metrics.batch_started();
  ata::runtime::RoundReport report;
  report.round = 1;
  report.busy = {30ms, 10ms};
  report.tasks = {{0, 0, 10ms, true}, {1, 0, 20ms, true}, {2, 1, 10ms, false}};
  metrics.batch_finished(svc::BatchOutcome::completed, &report);
  metrics.batch_finished(svc::BatchOutcome::cancelled, nullptr);

  const auto stats = metrics.stats_json();
  CHECK(stats["server"]["strategy"] == "pull");
  CHECK(stats["responses"]["200"] == 2);
  CHECK(stats["batches"]["completed"] == 1);
  CHECK(stats["batches"]["cancelled"] == 1);
  CHECK(stats["batches"]["in_flight"] == 0);
  CHECK(stats["workers"][0]["learned_mean_seconds"].get<double>() == Approx(0.015));
  CHECK(stats["workers"][0]["tasks_run"] == 2);
  CHECK(stats["workers"][1]["observations"] == 0);  // a discarded task teaches nothing
  CHECK(stats["workers"][1]["tasks_run"] == 1);
  CHECK(stats["workers"][1]["busy_seconds"].get<double>() == Approx(0.01));

  // The registry holds the service's own counters and the scheduler observer's metrics.
  const auto text = metrics.prometheus_text();
  CHECK_THAT(text, ContainsSubstring("ata_http_responses_total{code=\"404\"} 1\n"));
  CHECK_THAT(text, ContainsSubstring("ata_http_responses_total{code=\"200\"} 2\n"));
  CHECK_THAT(text, ContainsSubstring("ata_refused_connections_total 0\n"));
  CHECK_THAT(text, ContainsSubstring("# TYPE ata_batch_wall_seconds histogram\n"));
  CHECK_THAT(text, ContainsSubstring("ata_worker_learned_mean_seconds{worker=\"1\"} 0\n"));
}

TEST_CASE("an estimate reply carries the estimate, every result and the batch report",
          "[service]") {
  ata::runtime::BatchResult<svc::PricingPart> result;
  result.values = {{2, 20.0, 200.0}, {2, 10.0, 50.0}};
  result.report.round = 7;
  result.report.allocation = ata::Allocation(std::vector<std::size_t>{2, 0});
  result.report.busy = {4ms, 0ms};
  result.report.wall = 5ms;
  const auto reply = svc::estimate_reply(result, {}, 42, "ata-auto", 6ms, 0.5);
  CHECK(reply["estimate"].get<double>() == Approx(7.5));
  CHECK(reply["samples"] == 2);
  CHECK(reply["draws"] == 4);
  CHECK(reply["seed"] == 42);
  CHECK(reply["results"] == nlohmann::json::array({10.0, 5.0}));
  CHECK(reply["batch"]["round"] == 7);
  CHECK(reply["batch"]["allocation"] == nlohmann::json::array({2, 0}));
  CHECK(reply["batch"]["worker_seconds"].get<double>() == Approx(0.004));
  CHECK(reply["batch"]["work_price"] == 0.5);
  CHECK(reply["batch"]["objective_seconds"].get<double>() == Approx(0.005 + 0.5 * 0.004));
  CHECK(reply["batch"]["dispatch"] == "allocated");
  CHECK(reply["latency_seconds"].get<double>() == Approx(0.006));
  CHECK(svc::json_text(svc::error_reply(404, "no")) == R"({"error":"no","status":404})");
}

#include "estimate_reply.hpp"

#include <string>
#include <vector>

namespace ata::service {

namespace {

double seconds(std::chrono::nanoseconds t) { return std::chrono::duration<double>(t).count(); }

}  // namespace

nlohmann::json batch_report_json(const runtime::RoundReport& report, std::string_view strategy,
                                 double work_price) {
  return {
      {"round", report.round},
      {"strategy", strategy},
      {"dispatch", std::string(dispatch_name(report.dispatch))},
      {"allocation", std::vector<std::size_t>(report.allocation.begin(), report.allocation.end())},
      {"wall_seconds", seconds(report.wall)},
      {"worker_seconds", seconds(report.worker_time())},
      {"work_price", work_price},
      {"objective_seconds", seconds(report.wall) + work_price * seconds(report.worker_time())},
      {"critical_path_seconds", seconds(report.critical_path())},
      {"overhead_seconds", seconds(report.overhead())},
      {"discarded_tasks", report.discarded()}};
}

nlohmann::json estimate_reply(const runtime::BatchResult<PricingPart>& result,
                              const EuropeanCall& option, std::uint64_t seed,
                              std::string_view strategy, std::chrono::nanoseconds latency,
                              double work_price) {
  const PricingEstimate pooled = combine(result.values);
  std::vector<double> prices;
  prices.reserve(result.values.size());
  for (const auto& part : result.values) prices.push_back(part_price(part));
  return {{"estimate", pooled.price},
          {"standard_error", pooled.standard_error},
          {"black_scholes", black_scholes_price(option)},
          {"samples", result.values.size()},
          {"draws", pooled.draws},
          {"seed", seed},
          {"results", prices},
          {"batch", batch_report_json(result.report, strategy, work_price)},
          {"latency_seconds", seconds(latency)}};
}

nlohmann::json error_reply(unsigned status, std::string_view message) {
  return {{"error", message}, {"status", status}};
}

std::string json_text(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace ata::service

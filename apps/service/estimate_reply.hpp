#pragma once
// The JSON ata-serve sends back for a completed POST /estimate, and its error bodies.

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "ata/runtime/batch_result.hpp"
#include "option_pricing.hpp"

namespace ata::service {

/// {"round", "strategy", "dispatch", "allocation", "wall_seconds", "worker_seconds",
///  "work_price", "objective_seconds" (wall + work_price x worker seconds, ata::Objective),
///  "critical_path_seconds", "overhead_seconds", "discarded_tasks"}.
[[nodiscard]] nlohmann::json batch_report_json(const runtime::RoundReport& report,
                                               std::string_view strategy, double work_price);

/// {"estimate", "standard_error", "black_scholes", "samples", "draws", "seed", "results" (one
/// price per task, by task index), "batch" (batch_report_json with `work_price`), "latency_seconds" (from the
/// batch's start to its end, as the server saw it)}.
[[nodiscard]] nlohmann::json estimate_reply(const runtime::BatchResult<PricingPart>& result,
                                            const EuropeanCall& option, std::uint64_t seed,
                                            std::string_view strategy,
                                            std::chrono::nanoseconds latency, double work_price);

/// {"error": message, "status": status}.
[[nodiscard]] nlohmann::json error_reply(unsigned status, std::string_view message);

/// JSON text of `value` with invalid UTF-8 replaced (a client's bytes may be quoted in it).
[[nodiscard]] std::string json_text(const nlohmann::json& value);

}  // namespace ata::service

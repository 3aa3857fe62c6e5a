#pragma once
// Checks of the Chrome traces ata writes (the simulator's and the runtime's writers): each
// process has its "rounds" track at tid = workers, and every round is a flow, an arrow from
// its round slice to each of its task slices; and the spans of a round against its report.
// Slices of streams (args without "round") are not batches' and are left to their own checks.

#include <catch2/catch_test_macros.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "ata/runtime/round_report.hpp"

namespace ata::testing {

// (task, worker, accepted) of every task slice of `round`, or of every record of a report,
// sorted: a traced round holds each record of its report once, on the record's worker's track.
using Span = std::tuple<std::size_t, std::size_t, bool>;

inline std::vector<Span> slices_of(const nlohmann::json& trace, std::size_t round) {
  std::vector<Span> spans;
  for (const auto& event : trace["traceEvents"]) {
    if (event["ph"] != "X" || event["cat"] == "round" || !event["args"].contains("round") ||
        event["args"]["round"] != round) {
      continue;
    }
    spans.emplace_back(event["args"]["task"].get<std::size_t>(), event["tid"].get<std::size_t>(),
                       event["cat"] == "accepted");
  }
  std::sort(spans.begin(), spans.end());
  return spans;
}

inline std::vector<Span> records_of(const runtime::RoundReport& report) {
  std::vector<Span> spans;
  for (const runtime::TaskRecord& task : report.tasks) {
    spans.emplace_back(task.task, task.worker, task.accepted);
  }
  std::sort(spans.begin(), spans.end());
  return spans;
}

// Every task slice is the target of exactly one flow, named after its round, ending ("f",
// bound to its enclosing slice) on the slice's own track within the slice; the flow starts
// ("s", same id and time) on the rounds track within that round's slice; and every flow is
// such an arrow. Returns the number of flows.
inline std::size_t check_batch_flows(const nlohmann::json& trace, std::size_t workers) {
  constexpr double kRounding = 1e-3;  // times are written with 3 decimals
  struct Flow {
    const nlohmann::json* start = nullptr;
    const nlohmann::json* finish = nullptr;
    std::size_t targets = 0;
  };
  std::map<std::pair<int, long long>, Flow> flows;                 // (pid, id)
  std::map<std::pair<int, std::size_t>, const nlohmann::json*> rounds;  // (pid, round)
  std::vector<const nlohmann::json*> tasks;
  for (const auto& e : trace.at("traceEvents")) {
    const std::string ph = e.at("ph");
    if (ph == "s" || ph == "f") {
      Flow& flow = flows[{e.at("pid").get<int>(), e.at("id").get<long long>()}];
      const nlohmann::json*& end = ph == "s" ? flow.start : flow.finish;
      CHECK(end == nullptr);  // one start and one finish per id
      end = &e;
      CHECK(e.at("cat") == "batch");
    } else if (ph == "X" && e.at("cat") == "round") {
      rounds[{e.at("pid").get<int>(), e.at("args").at("round").get<std::size_t>()}] = &e;
    } else if (ph == "X" && e.at("args").contains("round")) {
      tasks.push_back(&e);
    }
  }
  const auto within = [&](double t, const nlohmann::json& slice) {
    const double ts = slice.at("ts").get<double>();
    return t >= ts - kRounding && t <= ts + slice.at("dur").get<double>() + kRounding;
  };
  // Each flow ends in the middle of its copy's slice: among the slices of its track and round
  // that hold its end (slices of a few nanoseconds may touch), the unclaimed one whose middle
  // is nearest.
  std::vector<std::size_t> into(tasks.size(), 0);
  for (auto& [key, flow] : flows) {
    REQUIRE(flow.start != nullptr);
    REQUIRE(flow.finish != nullptr);
    const nlohmann::json& f = *flow.finish;
    const double at = f.at("ts").get<double>();
    std::size_t best = tasks.size();
    double best_distance = 0.0;
    for (std::size_t k = 0; k < tasks.size(); ++k) {
      const nlohmann::json& task = *tasks[k];
      const auto round = task.at("args").at("round").get<std::size_t>();
      if (key.first != task.at("pid").get<int>() || f.at("tid") != task.at("tid") ||
          f.at("name") != "round " + std::to_string(round) || !within(at, task)) {
        continue;
      }
      const double middle = task.at("ts").get<double>() + task.at("dur").get<double>() / 2;
      const double distance = std::abs(middle - at) + (into[k] > 0 ? 1e300 : 0.0);
      if (best == tasks.size() || distance < best_distance) {
        best = k;
        best_distance = distance;
      }
    }
    if (best == tasks.size()) continue;  // counted below: no target
    ++into[best];
    ++flow.targets;
    const auto round = tasks[best]->at("args").at("round").get<std::size_t>();
    const nlohmann::json& s = *flow.start;
    CHECK(f.at("bp") == "e");
    CHECK(s.at("name") == f.at("name"));
    CHECK(s.at("ts") == f.at("ts"));
    CHECK(s.at("tid").get<std::size_t>() == workers);
    const auto slice = rounds.find({key.first, round});
    REQUIRE(slice != rounds.end());
    CHECK(within(s.at("ts").get<double>(), *slice->second));
  }
  for (std::size_t k = 0; k < tasks.size(); ++k) {
    INFO("task slice " << tasks[k]->dump());
    CHECK(into[k] == 1);
  }
  for (const auto& [key, flow] : flows) CHECK(flow.targets == 1);
  return flows.size();
}

}  // namespace ata::testing

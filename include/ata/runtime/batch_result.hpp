#pragma once
/// @file
/// What BatchScheduler::run() returns: the B results and the round report.

#include <vector>

#include "ata/runtime/round_report.hpp"

namespace ata::runtime {

/// The B accepted results by task index, and the report of the batch.
///
/// @code
/// ata::runtime::BatchResult<double> out = scheduler.run(8, [](const auto& ctx) { return 0.5 *
/// ctx.task(); });
/// // out.values == {0, 0.5, ..., 3.5}; out.report.tasks.size() >= 8
/// @endcode
template <class Result>
struct BatchResult {
  std::vector<Result> values;
  RoundReport report;
};

/// For tasks returning void: the report only.
template <>
struct BatchResult<void> {
  RoundReport report;
};

}  // namespace ata::runtime

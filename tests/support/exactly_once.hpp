#pragma once
// The check every batch with copies (backups, retries, restarts) must pass: one result per
// task index, from exactly one accepted copy.

#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <cstddef>
#include <vector>

#include "ata/runtime/round_report.hpp"

namespace ata::testing {

// Every index has exactly one accepted record, listed first in index order, and values[j] is
// task j's value (the tasks return their index).
template <class Values>
void check_exactly_once(const Values& values, const runtime::RoundReport& report,
                        std::size_t batch) {
  REQUIRE(values.size() == batch);
  for (std::size_t j = 0; j < batch; ++j) CHECK(values[j] == j);
  std::vector<int> accepted(batch, 0);
  for (const runtime::TaskRecord& record : report.tasks) {
    REQUIRE(record.task < batch);
    if (record.accepted) ++accepted[record.task];
  }
  CHECK(std::all_of(accepted.begin(), accepted.end(), [](int n) { return n == 1; }));
  REQUIRE(report.tasks.size() >= batch);
  for (std::size_t j = 0; j < batch; ++j) CHECK(report.tasks[j].task == j);
}

}  // namespace ata::testing

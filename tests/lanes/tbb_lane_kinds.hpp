#pragma once
// The oneTBB kinds of the [lanes] tests (see lane_kinds.hpp): arenas made from constraints of
// different concurrency, and arenas the user owns. Shared by the lane and engine tests; a file
// including it defines TBB_PREVIEW_TASK_ARENA_CONSTRAINTS_EXTENSION before any TBB header
// (core_type in task_arena::constraints is a preview in oneTBB 2021).
#include <oneapi/tbb/task_arena.h>

#include <cstddef>
#include <memory>
#include <string_view>
#include <vector>

#include "ata/runtime/arena_lanes.hpp"
#include "lanes/lane_kinds.hpp"

namespace ata::testing {
namespace tbb = oneapi::tbb;

// Lane i may use 2 threads when i is even, 1 when odd.
inline int concurrency_of(std::size_t lane) { return lane % 2 == 0 ? 2 : 1; }

// Arenas the lanes make from constraints.
struct ArenasFromConstraints {
  static constexpr std::string_view name = "ArenaLanes from constraints";
  std::unique_ptr<ata::runtime::Lanes> make(const ata::runtime::LaneOptions& options) {
    std::vector<tbb::task_arena::constraints> parts(options.workers());
    for (std::size_t i = 0; i < parts.size(); ++i) parts[i].set_max_concurrency(concurrency_of(i));
    return std::make_unique<ata::runtime::ArenaLanes>(parts, options);
  }
};

// Arenas of the user's, which outlive the lanes.
struct UserArenas {
  static constexpr std::string_view name = "ArenaLanes on user arenas";
  UserArenas() {
    for (std::size_t i = 0; i < kMaxLanes; ++i) {
      arenas.push_back(std::make_unique<tbb::task_arena>(concurrency_of(i), 0));
    }
  }
  std::unique_ptr<ata::runtime::Lanes> make(const ata::runtime::LaneOptions& options) {
    std::vector<tbb::task_arena*> used;
    for (std::size_t i = 0; i < options.workers(); ++i) used.push_back(arenas[i].get());
    return std::make_unique<ata::runtime::ArenaLanes>(used, options);
  }
  std::vector<std::unique_ptr<tbb::task_arena>> arenas;
};

}  // namespace ata::testing

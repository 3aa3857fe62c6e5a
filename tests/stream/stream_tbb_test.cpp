// [stream] on ArenaLanes: arenas made from constraints and arenas the user owns
// (tests/lanes/tbb_lane_kinds.hpp). Labelled [tbb] and kept out of ThreadSanitizer runs:
// Debian's libtbb is not instrumented.
// core_type in task_arena::constraints is a preview in oneTBB 2021.
#define TBB_PREVIEW_TASK_ARENA_CONSTRAINTS_EXTENSION 1
#include <tuple>

#include "lanes/tbb_lane_kinds.hpp"

using LaneKinds = std::tuple<ata::testing::ArenasFromConstraints, ata::testing::UserArenas>;
#define ATA_STREAM_TAG "[tbb]"
#define ATA_STREAM_PREFIX "stream, arena lanes: "
#include "stream/stream_scenarios.hpp"
#include "stream/stream_observer_scenarios.hpp"

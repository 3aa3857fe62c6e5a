// [engines] The plans of plan_table.hpp through the simulator and through the thread runtime
// on ArenaLanes (oneTBB). Labelled [tbb] and kept out of ThreadSanitizer runs, as the [lanes]
// tests on arenas: Debian's libtbb is not instrumented. [serial]: every lane of a plan must
// get a TBB thread at once (the test blocks them all), which other tests' load can delay, as
// for "arena lanes: every lane of every live set gets a thread at once".
// core_type in task_arena::constraints is a preview in oneTBB 2021 (one TU here uses TBB).
#define TBB_PREVIEW_TASK_ARENA_CONSTRAINTS_EXTENSION 1
#include <tuple>

#include "lanes/lane_kinds.hpp"
#include "lanes/tbb_lane_kinds.hpp"

using LaneKinds = std::tuple<ata::testing::ArenasFromConstraints, ata::testing::UserArenas>;
#define ATA_ENGINES_TAG "[tbb][serial]"
#define ATA_ENGINES_PREFIX "engines on arenas: "
#include "engines/plan_equality.hpp"

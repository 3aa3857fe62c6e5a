// [runtime][options] The product of the scheduler's options (options_product.hpp) on
// ArenaLanes (oneTBB). Labelled [tbb] and kept out of ThreadSanitizer runs: Debian's libtbb is
// not instrumented.
// core_type in task_arena::constraints is a preview in oneTBB 2021 (one TU here uses TBB).
#define TBB_PREVIEW_TASK_ARENA_CONSTRAINTS_EXTENSION 1
#include <tuple>

#include "lanes/lane_kinds.hpp"
#include "lanes/tbb_lane_kinds.hpp"

using LaneKinds = std::tuple<ata::testing::ArenasFromConstraints>;
#define ATA_OPTIONS_TAG "[tbb]"
#define ATA_OPTIONS_PREFIX "options on arenas: "
#include "options/options_product.hpp"

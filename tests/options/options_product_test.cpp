// [runtime][options] The product of the scheduler's options (options_product.hpp) on
// WorkerPool, CallerLanePool and AsioLanes (an io_context per lane). Also runs under
// ThreadSanitizer. The oneTBB arenas are in options_product_tbb_test.cpp.
#include <tuple>

#include "lanes/asio_lane_kinds.hpp"
#include "lanes/lane_kinds.hpp"

using LaneKinds = std::tuple<ata::testing::OwnThreads, ata::testing::OwnThreadsAndCaller,
                             ata::testing::AsioContextPerLane>;
#define ATA_OPTIONS_TAG "[threads][asio]"
#define ATA_OPTIONS_PREFIX "options: "
#include "options/options_product.hpp"

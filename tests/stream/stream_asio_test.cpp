// [stream] on the AsioLanes kinds: an io_context per lane, one thread_pool, a strand per lane
// (tests/lanes/asio_lane_kinds.hpp). Also run under ThreadSanitizer.
#include <tuple>

#include "lanes/asio_lane_kinds.hpp"

using LaneKinds = std::tuple<ata::testing::AsioContextPerLane, ata::testing::AsioSharedPool,
                             ata::testing::AsioStrands>;
#define ATA_STREAM_TAG "[asio]"
#define ATA_STREAM_PREFIX "stream, asio lanes: "
#include "stream/stream_scenarios.hpp"

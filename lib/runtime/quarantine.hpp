#pragma once
// Quarantine of stuck lanes (Lanes::stuck_lanes()): applied to the policy's allocation, so
// that it holds whatever the policy is and knows. The policy allocates over every lane as it
// would (its learning and its view of the backlogs untouched); a stuck lane's share then goes
// to the other lanes.

#include <cstddef>
#include <span>

#include "ata/core/allocation.hpp"

namespace ata::runtime::detail {

// Moves the tasks `allocation` gives the `stuck` lanes (indices, ascending, each < size())
// to the other lanes, in proportion to the shares the allocation gives them (equally when it
// gives them nothing), largest remainders first, ties to the lower index. The total is kept.
// Unchanged when no lane is stuck or every lane is (there is nowhere else to go).
void move_off_stuck(std::span<const std::size_t> stuck, Allocation& allocation);

}  // namespace ata::runtime::detail

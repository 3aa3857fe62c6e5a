#include "ata/core/late_binding_rule.hpp"

#include <algorithm>

namespace ata {

std::size_t reached_by_others(std::span<const PacedWorker> workers, std::size_t worker, double now,
                              std::size_t waiting, double start_grace) noexcept {
  const double mine = workers[worker].mean;
  std::size_t reached = 0;
  for (std::size_t j = 0; j < workers.size() && reached < waiting; ++j) {
    const PacedWorker& other = workers[j];
    if (j == worker || !other.busy) continue;
    std::size_t ends = 0;
    if (mine > 0.0 && other.mean > 0.0) {
      const double ran = now - other.started;
      const double left = mine - std::max(other.mean - ran, ran);
      if (left >= other.mean) ends = static_cast<std::size_t>(left / other.mean);
    }
    if (other.pending && now - other.started < std::max(mine, start_grace)) {
      ends = std::max<std::size_t>(ends, 1);
    }
    reached += ends;
  }
  return std::min(reached, waiting);
}

}  // namespace ata

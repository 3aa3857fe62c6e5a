#include "runtime/quarantine.hpp"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace ata::runtime::detail {

void move_off_stuck(std::span<const std::size_t> stuck, Allocation& allocation) {
  const std::size_t n = allocation.size();
  if (stuck.empty() || stuck.size() >= n) return;
  std::vector<std::size_t> tasks(allocation.begin(), allocation.end());
  std::vector<bool> open(n, true);
  std::size_t moved = 0;
  for (std::size_t lane : stuck) {
    open[lane] = false;
    moved += std::exchange(tasks[lane], 0);
  }
  if (moved == 0) return;
  // Weights: the others' shares, or 1 each when they have none. A batch has at most
  // BatchScheduler::kMaxBatch = 2^22 tasks, so moved x weight fits in 64 bits.
  std::uint64_t total = 0;
  for (std::size_t j = 0; j < n; ++j) total += open[j] ? tasks[j] : 0;
  const bool equal = total == 0;
  if (equal) total = n - stuck.size();
  std::vector<std::uint64_t> remainder(n, 0);
  std::size_t given = 0;
  for (std::size_t j = 0; j < n; ++j) {
    if (!open[j]) continue;
    const std::uint64_t weight = equal ? 1 : tasks[j];
    const std::uint64_t share = static_cast<std::uint64_t>(moved) * weight;
    tasks[j] += static_cast<std::size_t>(share / total);
    given += static_cast<std::size_t>(share / total);
    remainder[j] = share % total;
  }
  // The tasks the integer parts left (fewer than the open lanes): largest remainders first.
  std::vector<std::size_t> order;
  for (std::size_t j = 0; j < n; ++j) {
    if (open[j]) order.push_back(j);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return remainder[a] > remainder[b]; });
  for (std::size_t k = 0; given < moved; ++k, ++given) ++tasks[order[k]];
  allocation = Allocation(std::move(tasks));
}

}  // namespace ata::runtime::detail

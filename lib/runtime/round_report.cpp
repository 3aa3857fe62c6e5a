#include "ata/runtime/round_report.hpp"

#include <algorithm>
#include <numeric>

namespace ata::runtime {

std::chrono::nanoseconds RoundReport::worker_time() const noexcept {
  return std::accumulate(busy.begin(), busy.end(), std::chrono::nanoseconds{0});
}

std::chrono::nanoseconds RoundReport::critical_path() const noexcept {
  return busy.empty() ? std::chrono::nanoseconds{0} : *std::max_element(busy.begin(), busy.end());
}

std::chrono::nanoseconds RoundReport::overhead() const noexcept {
  return std::max(wall - critical_path(), std::chrono::nanoseconds{0});
}

std::size_t RoundReport::discarded() const noexcept {
  return static_cast<std::size_t>(
      std::count_if(tasks.begin(), tasks.end(), [](const TaskRecord& t) { return !t.accepted; }));
}

}  // namespace ata::runtime

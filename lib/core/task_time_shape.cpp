#include "core/task_time_shape.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/normal_sampler.hpp"

namespace ata::detail {

namespace {

// After the first tables, rebuilt when the ratios added have doubled, and at least every this
// many ratios (kRatios times it).
constexpr std::size_t kRebuildRings = 8;
// The first tables wait for a full ring (see the class comment).
constexpr std::size_t kFirstBuild = TaskTimeShape::kRatios;
// The largest grid coordinate whose cell has a next grid point: just below kCells.
constexpr double kLastCell = static_cast<double>(TaskTimeShape::kCells) * (1.0 - 1e-12);

}  // namespace

TaskTimeShape::TaskTimeShape(std::uint64_t seed) noexcept
    : state_(seed), next_build_(kFirstBuild) {}

void TaskTimeShape::add(double ratio) {
  if (ratios_.size() < kRatios) {
    ratios_.push_back(ratio);
  } else {
    ratios_[added_ % kRatios] = ratio;
  }
  ++added_;
  if (added_ >= next_build_) {
    rebuild();
    next_build_ = added_ + std::min(added_, kRebuildRings * kRatios);
  }
}

void TaskTimeShape::rebuild() {
  const std::size_t count = ratios_.size();
  double total = 0.0;
  for (const double r : ratios_) total += r;
  if (!(total > 0.0)) return;  // zero times only: no shape to learn yet
  low_.resize(kTables);
  width_.resize(kTables);
  cdf_.assign(kTables * (kCells + 1), 0.0);
  // One task: the ratios themselves, whose tail (which the maximum of single tasks depends on)
  // resampling would only blur. More: sums along kPaths resampled paths.
  tabulate(ratios_, 1);
  sums_.assign(kPaths, 0.0);
  const auto draws = static_cast<double>(count);
  for (std::size_t a = 1; a <= kTables; ++a) {
    for (double& s : sums_) {
      const auto at = std::min(count - 1, static_cast<std::size_t>(uniform_open(state_) * draws));
      s += ratios_[at];
    }
    if (a >= 2) tabulate(sums_, a);
  }
}

// Table a from sums of a ratios: scaled to mean exactly 1 (their own mean, not the ratios', so
// that the resampling's error, 6 % for two tasks of cv 3 on 512 paths, does not make a task
// count cheaper or dearer than its mean says), and its CDF at kCells + 1 grid points.
void TaskTimeShape::tabulate(std::span<const double> sums, std::size_t a) {
  double low = std::numeric_limits<double>::infinity();
  double high = 0.0;
  double total = 0.0;
  for (const double s : sums) {
    low = std::min(low, s);
    high = std::max(high, s);
    total += s;
  }
  const auto count = static_cast<double>(sums.size());
  const double unit = total > 0.0 ? count / total : 1.0 / static_cast<double>(a);
  low *= unit;
  high *= unit;
  // Equal sums (constant times) still get a positive width: every grid point then has P = 1.
  const double width = std::max(high - low, 1e-12 * std::max(high, 1.0)) / kCells;
  low_[a - 1] = low;
  width_[a - 1] = width;
  double* cdf = &cdf_[(a - 1) * (kCells + 1)];
  // A sum x counts at the first grid point at or above it.
  for (const double s : sums) {
    const double cell = std::ceil((s * unit - low) / width);
    ++cdf[static_cast<std::size_t>(std::clamp(cell, 0.0, static_cast<double>(kCells)))];
  }
  double running = 0.0;
  for (std::size_t g = 0; g <= kCells; ++g) {
    running += cdf[g];
    cdf[g] = running / count;
  }
}

double TaskTimeShape::expected_max(std::span<const Term> terms) {
  scaled_.clear();
  double start = 0.0;  // below it, some sum is surely still running: P(max <= t) = 0
  double end = 0.0;    // above it, every sum is surely over
  std::size_t terms_with_tasks = 0;
  double single_mean = 0.0;
  for (const Term& term : terms) {
    if (term.tasks == 0) continue;
    ++terms_with_tasks;
    const auto a = static_cast<double>(term.tasks);
    const std::size_t table = std::min(term.tasks, kTables);
    const double shrink = term.tasks > kTables ? std::sqrt(static_cast<double>(kTables) / a) : 1.0;
    const double total = term.mean * a;
    single_mean = total;
    const double scale = total * shrink;
    const double offset = total - scale;
    const double low = offset + scale * low_[table - 1];
    const double high = low + scale * width_[table - 1] * kCells;
    start = std::max(start, low);
    end = std::max(end, high);
    if (scale > 0.0) {
      // The grid coordinate of t on the term's table: (t - offset) / scale, minus low, in cells.
      const double cells = 1.0 / (scale * width_[table - 1]);
      scaled_.push_back({cells, -(offset / scale + low_[table - 1]) / width_[table - 1],
                         &cdf_[(table - 1) * (kCells + 1)]});
    }
  }
  // One sum: its mean, exactly (each table's mean is 1), without the grid's error.
  if (terms_with_tasks == 1) return single_mean;
  if (!(end > start)) return start;
  const double step = (end - start) / kPanels;
  double outside = 0.0;  // integral of 1 - P(max <= t) over [start, end]
  for (std::size_t p = 0; p < kPanels; ++p) {
    const double t = start + (static_cast<double>(p) + 0.5) * step;
    double inside = 1.0;
    for (const Scaled& s : scaled_) {
      // t >= start is never below a grid; above one, F = 1 (the last grid point).
      const double g = std::clamp(s.slope * t + s.intercept, 0.0, kLastCell);
      const auto cell = static_cast<std::size_t>(g);
      const double* cdf = s.cdf + cell;
      inside *= cdf[0] + (g - static_cast<double>(cell)) * (cdf[1] - cdf[0]);
    }
    outside += 1.0 - inside;
  }
  return start + outside * step;
}

}  // namespace ata::detail

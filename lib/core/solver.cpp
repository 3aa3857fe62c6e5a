#include "ata/core/solver.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cmath>
#include <limits>
#include <string>

#include "ata/core/error.hpp"
#include "core/checks.hpp"

namespace ata {

void RoundRobinSpread::spread(std::span<const std::size_t> eligible, std::size_t batch,
                              Allocation& out) {
  if (eligible.empty()) throw InvalidArgument("spread: no eligible worker to give tasks to");
  const std::size_t z = eligible.size();
  const std::size_t each = batch / z;
  if (each > 0) {
    for (const std::size_t worker : eligible) out.add(worker, each);
  }
  // The remaining batch mod z tasks go to positions start, start + 1, ... (wrapping).
  std::size_t position = static_cast<std::size_t>(offset_ % z);
  for (std::size_t j = 0; j < batch % z; ++j) {
    out.add(eligible[position]);
    if (++position == z) position = 0;
  }
  offset_ += batch;
}

namespace {

// Lexicographic (score, index): the deterministic tie-break.
struct ScoreOrder {
  std::span<const double> scores;
  bool operator()(std::size_t a, std::size_t b) const noexcept {
    return scores[a] < scores[b] || (scores[a] == scores[b] && a < b);
  }
};

// The largest t in [0, limit] such that holds(1), ..., holds(t) all hold, for a predicate that
// holds up to some point and fails after. Starts from `guess` (when it holds), then gallops and
// bisects: O(log t) calls, so a long run of tasks whose values tie (an offset so much larger
// than the score that q + j s rounds to q) costs about as much as a single task.
template <typename Holds>
std::size_t longest_run(std::size_t limit, std::size_t guess, const Holds& holds) {
  std::size_t low = 0;       // holds(1..low)
  std::size_t high = limit;  // the answer is at most high
  if (guess > 0 && guess <= limit) {
    if (holds(guess)) {
      low = guess;
    } else {
      high = guess - 1;
    }
  }
  for (std::size_t step = 1; low<high; step = step>(high - low) / 2 ? high - low : 2 * step) {
    const std::size_t probe = low + std::min(step, high - low);
    if (!holds(probe)) {
      high = probe - 1;
      break;
    }
    low = probe;
  }
  while (low < high) {
    const std::size_t middle = low + (high - low - 1) / 2 + 1;  // in (low, high]
    if (holds(middle)) {
      low = middle;
    } else {
      high = middle - 1;
    }
  }
  return low;
}

}  // namespace

Allocation MinMaxSolver::solve(std::span<const double> scores, std::size_t batch) {
  Allocation out;
  solve(scores, batch, out);
  return out;
}

void MinMaxSolver::solve(std::span<const double> scores, std::size_t batch, Allocation& out) {
  if (!prepare(scores, batch, out)) solve_positive(scores, batch, out);
}

void MinMaxSolver::solve(std::span<const double> scores, std::span<const double> offsets,
                         std::size_t batch, Allocation& out) {
  // Offsets first: prepare() may advance the spread counter.
  if (offsets.size() != scores.size()) {
    throw InvalidArgument("offsets: expected one per worker (" + std::to_string(scores.size()) +
                          "), got " + std::to_string(offsets.size()));
  }
  bool all_zero = true;
  for (std::size_t i = 0; i < offsets.size(); ++i) {
    if (!std::isfinite(offsets[i]) || offsets[i] < 0.0) {
      throw InvalidArgument("offset of worker " + std::to_string(i) +
                            " must be finite and >= 0, got " + detail::to_text(offsets[i]));
    }
    all_zero = all_zero && offsets[i] == 0.0;
  }
  if (prepare(scores, batch, out)) return;
  if (all_zero) {
    solve_positive(scores, batch, out);
  } else {
    solve_with_offsets(scores, offsets, batch, out);
  }
}

bool MinMaxSolver::prepare(std::span<const double> scores, std::size_t batch, Allocation& out) {
  if (batch < 1) throw InvalidArgument("batch size B must be >= 1, got 0");
  if (scores.empty()) throw InvalidArgument("cannot allocate over 0 workers: need n >= 1");
  // Integer checks on the bit patterns, which the compiler vectorises: a double is finite and
  // >= +0 iff its pattern has the sign bit clear and stays clear when the exponent is bumped.
  constexpr std::uint64_t kSign = 0x8000'0000'0000'0000;
  constexpr std::uint64_t kExponentStep = 0x0010'0000'0000'0000;
  std::uint64_t flags = 0;
  std::uint64_t zeros = 0;
  for (const double s : scores) {
    const auto bits = std::bit_cast<std::uint64_t>(s);
    flags |= bits | (bits + kExponentStep);
    zeros += static_cast<std::uint64_t>(bits == 0);
  }
  const bool valid = (flags & kSign) == 0;
  bool any_zero = zeros > 0;
  if (!valid) {
    for (std::size_t i = 0; i < scores.size(); ++i) {
      if (!std::isfinite(scores[i]) || scores[i] < 0.0) {
        throw InvalidArgument("score of worker " + std::to_string(i) +
                              " must be finite and >= 0, got " + detail::to_text(scores[i]));
      }
    }
    any_zero = true;  // only -0.0 reaches here: valid, and zero
  }
  if (out.size() == scores.size()) {
    out.clear();
  } else {
    out = Allocation(scores.size());
  }
  if (any_zero) {
    candidates_.clear();
    for (std::size_t i = 0; i < scores.size(); ++i) {
      if (scores[i] == 0.0) candidates_.push_back(i);
    }
    spread_.spread(candidates_, batch, out);
    return true;
  }
  return false;
}

void MinMaxSolver::solve_positive(std::span<const double> scores, std::size_t batch,
                                  Allocation& out) {
  const std::size_t n = scores.size();
  const std::size_t m = std::min(batch, n);
  const ScoreOrder order{scores};

  // Only the m smallest (score, index) workers can receive a task: any other worker has m >= B
  // workers whose first task comes before its own.
  if (m == n) {
    candidates_.resize(n);
    for (std::size_t i = 0; i < n; ++i) candidates_[i] = i;
  } else if (m * 16 < n) {
    // Few winners among many: one pass with a bounded max-heap; most workers lose a single
    // comparison with the heap's top, so this is close to n comparisons.
    candidates_.resize(m);
    for (std::size_t i = 0; i < m; ++i) candidates_[i] = i;
    std::make_heap(candidates_.begin(), candidates_.end(), order);
    // Every index in the heap is below i, so a tie never displaces: compare scores only.
    double worst = scores[candidates_.front()];
    for (std::size_t i = m; i < n; ++i) {
      if (scores[i] < worst) {
        std::pop_heap(candidates_.begin(), candidates_.end(), order);
        candidates_.back() = i;
        std::push_heap(candidates_.begin(), candidates_.end(), order);
        worst = scores[candidates_.front()];
      }
    }
  } else {
    candidates_.resize(n);
    for (std::size_t i = 0; i < n; ++i) candidates_[i] = i;
    std::nth_element(candidates_.begin(), candidates_.begin() + static_cast<std::ptrdiff_t>(m),
                     candidates_.end(), order);
    candidates_.resize(m);
  }

  // The fractional level lambda = B / sum(1/s_i), computed relative to the smallest score s:
  // sum(s / s_i) lies in [1, m], while sum(1/s_i) itself overflows for subnormal scores.
  double smallest = scores[candidates_.front()];
  for (const std::size_t i : candidates_) smallest = std::min(smallest, scores[i]);
  double relative_sum = 0.0;
  for (const std::size_t i : candidates_) relative_sum += smallest / scores[i];
  const double level = static_cast<double>(batch) / relative_sum * smallest;
  place_below_level(scores, {}, batch, level, out);
}

void MinMaxSolver::solve_with_offsets(std::span<const double> scores,
                                      std::span<const double> offsets, std::size_t batch,
                                      Allocation& out) {
  const std::size_t n = scores.size();
  const std::size_t m = std::min(batch, n);
  // The value of worker i's j-th task, computed exactly as the greedy compares it.
  const auto value = [&](std::size_t i, std::size_t j) {
    return offsets[i] + static_cast<double>(j) * scores[i];
  };
  // Only the m workers with the smallest first task (q_i + s_i, i) can receive one.
  candidates_.resize(n);
  for (std::size_t i = 0; i < n; ++i) candidates_[i] = i;
  const auto first_task = [&](std::size_t a, std::size_t b) {
    const double va = value(a, 1);
    const double vb = value(b, 1);
    return va < vb || (va == vb && a < b);
  };
  if (m < n) {
    std::nth_element(candidates_.begin(), candidates_.begin() + static_cast<std::ptrdiff_t>(m),
                     candidates_.end(), first_task);
    candidates_.resize(m);
  }

  // Water-fill: the level lambda with sum_{q_i < lambda} (lambda - q_i) / s_i = B, over the
  // candidates by increasing offset. c_i = #{j >= 1 : q_i + j s_i < lambda} then sums to at
  // most B and leaves at most one task per candidate to the heap.
  std::sort(candidates_.begin(), candidates_.end(),
            [&](std::size_t a, std::size_t b) { return offsets[a] < offsets[b]; });
  // The sums are taken relative to the smallest score s of the workers filled so far, as in
  // solve_positive(): sum(s / s_i) stays in [1, m] where sum(1/s_i) overflows for subnormal
  // scores. Not the smallest of all candidates: if that worker's offset keeps it out, every
  // share s / s_i could be subnormal and the level lose all its precision (a hang followed).
  // Summed in long double: B s and the weighted offsets can pass the largest double while the
  // level itself does not, and an infinite level makes every finite pair count, up to about
  // 2 B pairs whose surplus is then dropped one at a time between equal workers (a hang).
  double smallest = scores[candidates_.front()];
  long double relative_sum = 0.0L;
  long double weighted_offsets = 0.0L;
  double level = 0.0;
  for (std::size_t c = 0; c < m; ++c) {
    const std::size_t i = candidates_[c];
    if (scores[i] < smallest) {
      const long double rescale = static_cast<long double>(scores[i]) / smallest;
      relative_sum *= rescale;
      weighted_offsets *= rescale;
      smallest = scores[i];
    }
    const long double share = static_cast<long double>(smallest) / scores[i];
    relative_sum += share;
    weighted_offsets += offsets[i] * share;
    level = static_cast<double>((static_cast<long double>(batch) * smallest + weighted_offsets) /
                                relative_sum);
    if (c + 1 == m || level <= offsets[candidates_[c + 1]]) break;
  }
  place_below_level(scores, offsets, batch, level, out);
}

// Shared by both paths, with the candidates chosen and the level known: c_i = #{j >= 1 :
// q_i + j s_i < lambda} (q_i = 0 without offsets), a prefix of the greedy order as every pair
// below lambda precedes every pair at or above it (the values are compared in floating point
// exactly as the greedy compares them); then the remaining tasks greedily.
void MinMaxSolver::place_below_level(std::span<const double> scores,
                                     std::span<const double> offsets, std::size_t batch,
                                     double level, Allocation& out) {
  const std::size_t m = candidates_.size();
  const auto value = [&](std::size_t i, std::size_t j) {
    return (offsets.empty() ? 0.0 : offsets[i]) + static_cast<double>(j) * scores[i];
  };
  // lambda is infinite only when it exceeds the largest double: the prefix is then every pair
  // of finite cost.
  const double finite_level = std::isinf(level) ? std::numeric_limits<double>::max() : level;
  counts_.assign(m, 0);
  // Rounding can make the counts sum to a little more than B (a few tasks per worker, more once
  // B passes 2^53), which near 2^64 does not fit: the tasks beyond B are counted apart.
  std::size_t placed = 0;
  std::size_t excess = 0;
  for (std::size_t c = 0; c < m; ++c) {
    const std::size_t i = candidates_[c];
    const double offset = offsets.empty() ? 0.0 : offsets[i];
    if (!(offset < level)) continue;
    // No task count exceeds B; compared as doubles, as B may round up to 2^64 (out of range).
    const double estimate = std::floor((finite_level - offset) / scores[i]);
    const std::size_t guess =
        estimate < static_cast<double>(batch) ? static_cast<std::size_t>(estimate) : batch;
    const std::size_t count =
        longest_run(batch, guess, [&](std::size_t j) { return value(i, j) < level; });
    counts_[c] = count;
    if (count > batch - placed) {
      excess += count - (batch - placed);
      placed = batch;
    } else {
      placed += count;
    }
  }
  // Heap entries carry the candidate slot; break ties by worker index, not slot.
  auto after = [this](const std::pair<double, std::size_t>& a,
                      const std::pair<double, std::size_t>& b) {
    return a.first > b.first ||
           (a.first == b.first && candidates_[a.second] > candidates_[b.second]);
  };
  // Drop the excess: the last pairs of the greedy order.
  if (excess > 0) {
    heap_.clear();
    for (std::size_t c = 0; c < m; ++c) {
      if (counts_[c] > 0) heap_.emplace_back(value(candidates_[c], counts_[c]), c);
    }
    const auto before = [&after](const auto& a, const auto& b) { return after(b, a); };
    std::make_heap(heap_.begin(), heap_.end(), before);  // the latest pair on top
    // The latest worker drops its pairs, as many at once as come after every other's latest.
    while (excess > 0) {
      std::pop_heap(heap_.begin(), heap_.end(), before);
      const std::size_t c = heap_.back().second;
      const std::size_t i = candidates_[c];
      const bool alone = heap_.size() == 1;
      const std::pair<double, std::size_t> rival = alone ? heap_.back() : heap_.front();
      const std::size_t dropped = longest_run(std::min(excess, counts_[c]), 1, [&](std::size_t t) {
        return alone || after({value(i, counts_[c] - t + 1), c}, rival);
      });
      counts_[c] -= dropped;
      excess -= dropped;
      if (counts_[c] == 0) {
        heap_.pop_back();
        continue;
      }
      heap_.back().first = value(i, counts_[c]);
      std::push_heap(heap_.begin(), heap_.end(), before);
    }
  }
  // Place the remaining tasks greedily: the earliest worker takes, at once, every next pair that
  // comes before the other workers' next ones. Usually about m tasks are left; when values tie
  // (infinite, or flat as q + j s rounds to q) one worker may take many in a single step.
  if (placed < batch) {
    heap_.clear();
    for (std::size_t c = 0; c < m; ++c) {
      heap_.emplace_back(value(candidates_[c], counts_[c] + 1), c);
    }
    std::make_heap(heap_.begin(), heap_.end(), after);
    while (placed < batch) {
      std::pop_heap(heap_.begin(), heap_.end(), after);
      const std::size_t c = heap_.back().second;
      const std::size_t i = candidates_[c];
      const bool alone = heap_.size() == 1;
      const std::pair<double, std::size_t> rival = alone ? heap_.back() : heap_.front();
      const std::size_t taken = longest_run(batch - placed, 1, [&](std::size_t t) {
        return alone || after(rival, {value(i, counts_[c] + t), c});
      });
      counts_[c] += taken;
      placed += taken;
      heap_.back().first = value(i, counts_[c] + 1);
      std::push_heap(heap_.begin(), heap_.end(), after);
    }
  }
  for (std::size_t c = 0; c < m; ++c) {
    if (counts_[c] > 0) out.add(candidates_[c], counts_[c]);
  }
}

Allocation solve_min_max(std::span<const double> scores, std::size_t batch) {
  return MinMaxSolver{}.solve(scores, batch);
}

}  // namespace ata

#pragma once
// Reference solvers of argmin_{sum a = B} max_i a_i s_i, slow and obviously right, for the
// property tests and as the benchmark's baseline.

#include <algorithm>
#include <cstddef>
#include <functional>
#include <limits>
#include <span>
#include <vector>

namespace ata::testing {

// The O(n B) greedy: each task goes to the worker with the smallest q_i + (a_i + 1) s_i, lowest
// index on ties (q_i = 0 without offsets). Positive scores only.
inline std::vector<std::size_t> naive_greedy(std::span<const double> scores, std::size_t batch,
                                             std::span<const double> offsets = {}) {
  std::vector<std::size_t> tasks(scores.size(), 0);
  for (std::size_t t = 0; t < batch; ++t) {
    std::size_t best = 0;
    double best_value = std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < scores.size(); ++i) {
      const double offset = offsets.empty() ? 0.0 : offsets[i];
      const double value = offset + static_cast<double>(tasks[i] + 1) * scores[i];
      if (value < best_value) {
        best_value = value;
        best = i;
      }
    }
    ++tasks[best];
  }
  return tasks;
}

// max over the workers with tasks of q_i + a_i s_i.
inline double loss_of(std::span<const std::size_t> tasks, std::span<const double> scores,
                      std::span<const double> offsets = {}) {
  double loss = 0.0;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const double offset = offsets.empty() ? 0.0 : offsets[i];
    if (tasks[i] > 0) loss = std::max(loss, offset + static_cast<double>(tasks[i]) * scores[i]);
  }
  return loss;
}

// Minimum loss over every allocation of `batch` tasks (all compositions of B into n parts).
inline double brute_force_min_loss(std::span<const double> scores, std::size_t batch,
                                   std::span<const double> offsets = {}) {
  std::vector<std::size_t> tasks(scores.size(), 0);
  double best = std::numeric_limits<double>::infinity();
  std::function<void(std::size_t, std::size_t)> place = [&](std::size_t worker, std::size_t left) {
    if (worker + 1 == scores.size()) {
      tasks[worker] = left;
      best = std::min(best, loss_of(tasks, scores, offsets));
      return;
    }
    for (std::size_t a = 0; a <= left; ++a) {
      tasks[worker] = a;
      place(worker + 1, left - a);
    }
  };
  place(0, batch);
  return best;
}

}  // namespace ata::testing

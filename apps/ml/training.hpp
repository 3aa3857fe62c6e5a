#pragma once
// Minibatch training on real threads: every round, B tasks (stochastic gradients or proxes at
// the current point) run on a WorkerPool under one strategy, and the step averages them.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "ata/core/make_policy.hpp"
#include "ata/runtime/batch_options.hpp"
#include "ata/sim/scenario.hpp"
#include "problems.hpp"

namespace ata::ml {

enum class Method {
  sgd,   ///< x <- x - step * mean of B stochastic gradients
  prox,  ///< x <- mean of B stochastic proxes prox_{step f_j}(x)
};

struct TrainingConfig {
  Method method = Method::sgd;
  sim::Scenario scenario = sim::make_preset("sqrt", 17);
  std::chrono::nanoseconds unit = std::chrono::microseconds(20);  ///< one model unit of delay
  bool burn = false;          ///< spin instead of sleeping the delays
  std::size_t batch = 23;
  std::size_t max_rounds = 2000;
  double step = 0.5;
  /// Stop once f(x) - f* <= target_gap * (f(x0) - f*).
  double target_gap = 0.05;
  std::uint64_t seed = 1;
  PolicyOptions policy;  ///< alpha (seconds), eta; OFTA's means are set from the scenario
  runtime::Backups backups = runtime::Backups::off;  ///< of allocated strategies
};

struct TrainingPoint {
  std::size_t round = 0;
  double wall_seconds = 0.0;    ///< summed batch wall times so far
  double worker_seconds = 0.0;  ///< summed worker times so far, discarded work included
  double gap = 0.0;             ///< f(x) - f*
};

struct TrainingRun {
  std::string name;
  bool reached = false;  ///< the target gap was reached within max_rounds
  std::size_t rounds = 0;
  double wall_seconds = 0.0;
  double worker_seconds = 0.0;
  double final_gap = 0.0;
  double overhead_share = 0.0;  ///< scheduler overhead / wall, over the run
  std::vector<TrainingPoint> trace;  ///< every round
};

/// Trains with `strategy` (a make_policy() name) on a fresh pool built from config.scenario.
/// Task j of round k draws its sample from sim::Rng(seed + k, j), so allocated and pull
/// strategies follow the same iterates. `progress` (optional) gets the rounds done.
/// Throws ata::InvalidArgument for bad settings, and ata::Error when the worker threads cannot
/// be started or the training diverges (f(x) - f* no longer finite: the step is too large).
[[nodiscard]] TrainingRun train(const Problem& problem, const TrainingConfig& config, std::string_view strategy,
                                const std::function<void(std::size_t)>& progress = {});

/// The mean task time of each worker of config.scenario, in seconds (OFTA's knowledge).
[[nodiscard]] std::vector<double> true_means_seconds(const TrainingConfig& config);

}  // namespace ata::ml

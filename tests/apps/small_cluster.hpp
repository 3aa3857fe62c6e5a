#pragma once
// The small cluster the training tests run on: four workers of the sqrt law, a microsecond a
// model unit, B = 6, target 5% of the initial gap.

#include <chrono>

#include "training.hpp"

inline ata::ml::TrainingConfig small_cluster(ata::ml::Method method) {
  ata::ml::TrainingConfig config;
  config.method = method;
  config.scenario = ata::models::make_preset("sqrt", 4);
  config.unit = std::chrono::microseconds(1);
  config.batch = 6;
  config.max_rounds = 3000;
  config.target_gap = 0.05;
  config.step = method == ata::ml::Method::sgd ? 0.5 : 2.0;
  config.policy.alpha = ata::ml::true_means_seconds(config).back();
  return config;
}

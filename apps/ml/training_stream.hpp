#pragma once
// The stream strategies of ata-sgd and ata-prox (ringmaster, ringmaster-ata,
// ringmaster-oracle): Ringmaster ASGD on a runtime::TaskStream, its workers chosen by the same
// ata::RingmasterWorkers as the simulator's stream.

#include <cstddef>
#include <functional>
#include <string_view>

#include "ata/core/ringmaster_workers.hpp"
#include "training.hpp"

namespace ata::ml {

/// train() for a stream strategy (config checked by train()): see train().
[[nodiscard]] TrainingRun train_stream(const Problem& problem, const TrainingConfig& config,
                                       std::string_view strategy, StreamSelection selection,
                                       const std::function<void(std::size_t)>& progress);

}  // namespace ata::ml

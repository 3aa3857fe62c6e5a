#pragma once
// The command line shared by ata-sgd and ata-prox.

#include <functional>
#include <memory>
#include <string_view>

#include "training.hpp"

namespace ata::ml {

/// Parses the flags, trains every requested strategy side by side, prints the comparison and
/// writes the requested files. Returns the process exit code.
int training_main(int argc, char** argv, Method method);

struct TrainingOptions;

/// What trains one strategy: train() on threads, or another back-end (ata-mpi-sgd's ranks).
using Trainer = std::function<TrainingRun(const Problem&, const TrainingConfig&, std::string_view,
                                          const std::function<void(std::size_t)>&)>;

/// As training_main() after parsing: trains every strategy of `options` with `trainer`,
/// prints the comparison (the workers called `worker_kind`, e.g. "ranks") and writes the
/// files. Throws as training_main() reports.
int run_training(const TrainingOptions& options, Method method, const char* program,
                 const Trainer& trainer, const char* worker_kind);
/// The problem of the command line (the data loaded or generated, f* computed).
[[nodiscard]] std::unique_ptr<Problem> make_training_problem(const TrainingOptions& options,
                                                             const char* program);
/// The training settings of the command line (scenario, unit, batch, rounds, step, seed...).
[[nodiscard]] TrainingConfig make_training_config(const TrainingOptions& options, Method method);

}  // namespace ata::ml

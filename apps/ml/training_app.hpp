#pragma once
// The command line shared by ata-sgd and ata-prox.

#include "training.hpp"

namespace ata::ml {

/// Parses the flags, trains every requested strategy side by side, prints the comparison and
/// writes the requested files. Returns the process exit code.
int training_main(int argc, char** argv, Method method);

}  // namespace ata::ml

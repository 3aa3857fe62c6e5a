// ata-sgd: minibatch SGD on real threads with heterogeneous workers, one strategy after the
// other: how much worker time ATA saves against GTA (Rennala SGD), how close it runs to OFTA.
#include "training_app.hpp"

int main(int argc, char** argv) { return ata::ml::training_main(argc, argv, ata::ml::Method::sgd); }

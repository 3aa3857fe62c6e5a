// ata-prox: minibatch stochastic proximal point on real threads: each task is the prox of one
// sampled loss at the current point, the step averages the B proxes.
#include "training_app.hpp"

int main(int argc, char** argv) { return ata::ml::training_main(argc, argv, ata::ml::Method::prox); }

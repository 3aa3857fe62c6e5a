// The smallest program on ata::mpi: a task registry identical on every rank, and MPI started
// and ended through the back-end (a real job would drive RankScheduler on rank 0 and
// serve_tasks on the others, as ata-mpi-sgd does). Run it under mpirun.
#include <mpi.h>

#include <ata/mpi/rank_scheduler.hpp>
#include <iostream>
#include <vector>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  ata::mpi::TaskRegistry tasks;
  tasks.add("echo", [](const ata::mpi::TaskInput& in) {
    return ata::mpi::Bytes(in.input.begin(), in.input.end());
  });
  const std::vector<double> point{1.0, 2.0};
  const ata::mpi::Bytes input = ata::mpi::to_bytes(point);
  const auto echoed =
      ata::mpi::read_doubles(tasks.find("echo")({.round = 1, .task = 0, .input = input}));
  std::cout << "echo: " << (echoed == point ? "same" : "different") << "\n";
  ata::mpi::finish(/*rank_lost=*/false);
  return echoed == point ? 0 : 1;
}

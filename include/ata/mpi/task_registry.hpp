#pragma once
/// @file
/// Named tasks for the MPI back-end: every rank registers the same names, and a batch names
/// the function its tasks run. Inputs and results travel as bytes.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace ata::mpi {

/// A serialised value: what a task receives and returns.
using Bytes = std::vector<std::byte>;

/// What one task of a batch is handed on a worker rank.
struct TaskInput {
  /// The batch number, 1-based (the scheduler's round).
  std::size_t round = 0;
  /// The task's number: its index 0..B-1 under quotas and in an indexed race; in a fungible
  /// race (greedy mode) a number no other task of the round has (worker w's k-th task is
  /// w + k * workers), not its place among the results.
  std::size_t task = 0;
  /// The batch's input, the same for every task of the round (for SGD: the current point).
  std::span<const std::byte> input;
  /// Whether this task's result is no longer wanted: in a fungible race, the root has ended the
  /// round (its B results are in); in a hedged batch (a plan with backups), another copy of the
  /// task gave its result first; and past the task's restart budget. Empty where every result
  /// counts. A long task may poll stop_requested() and return early, as a thread task polls
  /// TaskContext::stop_requested(): the result of a task that returns after the stop is
  /// dropped, never sent.
  std::function<bool()> stop;

  [[nodiscard]] bool stop_requested() const { return stop && stop(); }
};

/// A task: a plain function of its input, returning its serialised result.
using TaskFunction = std::function<Bytes(const TaskInput&)>;

/// Name -> function, built identically on every rank before the first batch.
///
/// @code
/// ata::mpi::TaskRegistry tasks;
/// tasks.add("square", [](const ata::mpi::TaskInput& in) {
///   double x = ata::mpi::read_doubles(in.input).at(0);
///   return ata::mpi::to_bytes(std::vector<double>{x * x});
/// });
/// @endcode
///
/// Closures cannot cross processes: a batch sends only the task's *name* and its input bytes,
/// so whatever a task needs beyond its input must already exist on every rank (built from the
/// same command line, the same files or the same seed), and a lambda's captures are those of
/// the rank that registered it. Register the same names on every rank.
///
/// Not synchronised; built once, then only read.
class TaskRegistry {
 public:
  /// Adds `name`. Throws ata::InvalidArgument for an empty name, a name already registered or
  /// an empty function.
  void add(const std::string& name, TaskFunction function);
  /// The function of `name`; throws ata::InvalidArgument naming it when it is not registered.
  [[nodiscard]] const TaskFunction& find(const std::string& name) const;
  [[nodiscard]] bool contains(const std::string& name) const { return tasks_.count(name) != 0; }

 private:
  std::map<std::string, TaskFunction, std::less<>> tasks_;
};

/// Doubles as bytes (native byte order: the ranks of one job share an architecture).
[[nodiscard]] Bytes to_bytes(std::span<const double> values);
/// The inverse of to_bytes(); throws ata::InvalidArgument when the size is not a multiple of
/// sizeof(double).
[[nodiscard]] std::vector<double> read_doubles(std::span<const std::byte> bytes);

}  // namespace ata::mpi

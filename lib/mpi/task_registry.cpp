#include "ata/mpi/task_registry.hpp"

#include <cstring>
#include <utility>

#include "ata/core/error.hpp"

namespace ata::mpi {

void TaskRegistry::add(const std::string& name, TaskFunction function) {
  if (name.empty()) throw InvalidArgument("a task needs a non-empty name");
  if (!function) throw InvalidArgument("task '" + name + "' has an empty function");
  if (!tasks_.emplace(name, std::move(function)).second) {
    throw InvalidArgument("task '" + name + "' is already registered");
  }
}

const TaskFunction& TaskRegistry::find(const std::string& name) const {
  const auto it = tasks_.find(name);
  if (it == tasks_.end()) throw InvalidArgument("no task named '" + name + "' is registered");
  return it->second;
}

Bytes to_bytes(std::span<const double> values) {
  Bytes out(values.size_bytes());
  if (!values.empty()) std::memcpy(out.data(), values.data(), out.size());
  return out;
}

std::vector<double> read_doubles(std::span<const std::byte> bytes) {
  if (bytes.size() % sizeof(double) != 0) {
    throw InvalidArgument("expected whole doubles, got " + std::to_string(bytes.size()) + " bytes");
  }
  std::vector<double> out(bytes.size() / sizeof(double));
  if (!out.empty()) std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

}  // namespace ata::mpi

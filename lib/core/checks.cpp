#include "core/checks.hpp"

#include <cmath>
#include <cstdio>

#include "ata/core/error.hpp"

namespace ata::detail {

std::string to_text(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.6g", value);
  return buffer;
}

void require_worker_index(std::size_t worker, std::size_t workers) {
  if (worker >= workers) {
    throw InvalidArgument("worker index " + std::to_string(worker) + " is out of range [0, " +
                          std::to_string(workers) + ")");
  }
}

void require_positive(double value, const char* name) {
  if (!std::isfinite(value) || value <= 0.0) {
    throw InvalidArgument(std::string(name) + " must be finite and > 0, got " + to_text(value));
  }
}

void require_non_negative(double value, const char* name) {
  if (!std::isfinite(value) || value < 0.0) {
    throw InvalidArgument(std::string(name) + " must be finite and >= 0, got " + to_text(value));
  }
}

}  // namespace ata::detail

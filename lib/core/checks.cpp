#include "core/checks.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "ata/core/error.hpp"

namespace ata::detail {

std::string to_text(double value) {
  char buffer[32];
  const auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, value);  // shortest exact
  return error == std::errc() ? std::string(buffer, end) : std::string("?");
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

std::string excerpt(std::string_view text, std::size_t max_chars) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (out.size() >= max_chars) return out + "...";
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte >= 0x20 && byte < 0x7f) {
      out += static_cast<char>(byte);
    } else {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", byte);
      out += escaped;
    }
  }
  return out;
}

}  // namespace ata::detail

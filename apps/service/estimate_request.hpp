#pragma once
// The body of ata-serve's POST /estimate, checked. Plain C++ (no Asio, no coroutines), so that
// the fuzzers, built with clang 14, can target parse_estimate_request().

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace ata::service {

/// What a request may ask for.
struct EstimateLimits {
  /// The largest limits ata-serve accepts (--max-samples, --max-body); the fuzzer parses with them.
  static constexpr std::size_t kMostSamples = 100000;
  static constexpr std::size_t kMostBody = 16 * 1024 * 1024;

  std::size_t max_samples = 1024;  ///< tasks per batch
  std::size_t max_body = 4096;     ///< bytes of JSON
};

/// A valid request: one batch of `samples` tasks.
struct EstimateRequest {
  std::size_t samples = 0;
  std::optional<std::uint64_t> seed;  ///< absent: the server picks one
};

/// A request refused: the HTTP status (400 or 413) and a message for the client.
struct RequestError {
  unsigned status = 400;
  std::string message;
};

/// Parses `body`, e.g. {"samples": 32} or {"samples": 32, "seed": 7}. Keys other than
/// "samples" and "seed" are errors (typos are caught); "samples" is a whole number from 1 to
/// limits.max_samples, "seed" a whole number from 0 to 2^64 - 1. A body longer than
/// limits.max_body gives status 413, every other error 400 (arrays and objects nested more than
/// 32 deep included: printing them would recurse that deep); messages name the key and the
/// value (cut short) and never quote the JSON library. Never throws except std::bad_alloc.
[[nodiscard]] std::variant<EstimateRequest, RequestError> parse_estimate_request(
    std::string_view body, const EstimateLimits& limits);

}  // namespace ata::service

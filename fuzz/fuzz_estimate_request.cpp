// Fuzz target: ata-serve's request parser (ata::service::parse_estimate_request).
//
// Input: the body of a POST /estimate. It is parsed twice: with ata-serve's default limits and
// with the largest it accepts (--max-samples 100000, --max-body 16 MiB), so that the size check
// does not hide what lies behind it. Any exception, a crash, undefined behaviour or a hang is a
// finding. A refusal must be 413 exactly when the body is over the limit and 400 otherwise, with
// a short message in valid UTF-8 that does not quote the JSON library. An accepted request must
// be within the limits and say what the body says: the JSON, parsed here on its own, is an
// object whose only keys are "samples" (that number) and optionally "seed" (that number).

#include <cstddef>
#include <cstdint>
#include <exception>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "estimate_request.hpp"
#include "fuzz_support.hpp"

namespace {

using ata::fuzz::finding;
using ata::service::EstimateLimits;
using ata::service::EstimateRequest;
using ata::service::RequestError;

// A message a client can read: a sentence, not a quoted body.
constexpr std::size_t kLongestMessage = 256;

bool is_valid_utf8(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto lead = static_cast<unsigned char>(text[i]);
    std::size_t length = 0;
    std::uint32_t code = 0;
    if (lead < 0x80) {
      length = 1;
      code = lead;
    } else if ((lead & 0xE0) == 0xC0) {
      length = 2;
      code = lead & 0x1Fu;
    } else if ((lead & 0xF0) == 0xE0) {
      length = 3;
      code = lead & 0x0Fu;
    } else if ((lead & 0xF8) == 0xF0) {
      length = 4;
      code = lead & 0x07u;
    } else {
      return false;
    }
    if (i + length > text.size()) return false;
    for (std::size_t k = 1; k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xC0) != 0x80) return false;
      code = (code << 6) | (next & 0x3Fu);
    }
    constexpr std::uint32_t kShortestOf[] = {0, 0, 0x80, 0x800, 0x10000};
    if (code < kShortestOf[length] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) {
      return false;
    }
    i += length;
  }
  return true;
}

void check_refusal(std::string_view body, const EstimateLimits& limits, const RequestError& e) {
  const unsigned expected_status = body.size() > limits.max_body ? 413 : 400;
  if (e.status != expected_status) {
    finding("status " + std::to_string(e.status) + " for a body of " + std::to_string(body.size()) +
            " bytes (limit " + std::to_string(limits.max_body) + "), expected " +
            std::to_string(expected_status));
  }
  if (e.message.empty()) finding("empty error message");
  if (e.message.size() > kLongestMessage) {
    finding("error message of " + std::to_string(e.message.size()) + " bytes");
  }
  if (!is_valid_utf8(e.message)) finding("error message not valid UTF-8");
  // Unless the body itself says it, inside a value the message quotes.
  if (e.message.find("json.exception") != std::string::npos &&
      body.find("json.exception") == std::string_view::npos) {
    finding("error message quotes the JSON library: " + e.message);
  }
}

void check_acceptance(std::string_view body, const EstimateLimits& limits,
                      const EstimateRequest& request) {
  if (request.samples < 1 || request.samples > limits.max_samples) {
    finding("accepted samples " + std::to_string(request.samples) + " outside 1.." +
            std::to_string(limits.max_samples));
  }
  if (body.size() > limits.max_body) finding("accepted a body over the size limit");
  const auto document = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!document.is_object()) finding("accepted a body that is not a JSON object");
  // The JSON parser reads every whole number >= 0 as unsigned, every negative one as signed,
  // and -0 as a signed 0.
  const auto whole = [](const nlohmann::json& value) -> std::optional<std::uint64_t> {
    if (value.is_number_unsigned()) return value.get<std::uint64_t>();
    if (value.is_number_integer() && value.get<std::int64_t>() == 0) return 0;
    return std::nullopt;
  };
  for (const auto& [key, value] : document.items()) {
    if (key == "samples") {
      if (whole(value) != request.samples) {
        finding("accepted samples " + std::to_string(request.samples) + " but the body says " +
                value.dump());
      }
    } else if (key == "seed") {
      if (!whole(value) || request.seed != whole(value)) {
        finding("accepted a seed that is not the body's " + value.dump());
      }
    } else {
      finding("accepted an unknown key");
    }
  }
  if (!document.contains("samples")) finding("accepted a body without \"samples\"");
  if (request.seed && !document.contains("seed")) finding("a seed the body does not give");
}

void parse_and_check(std::string_view body, const EstimateLimits& limits) {
  try {
    const auto parsed = ata::service::parse_estimate_request(body, limits);
    if (const auto* error = std::get_if<RequestError>(&parsed)) {
      check_refusal(body, limits, *error);
    } else {
      check_acceptance(body, limits, std::get<EstimateRequest>(parsed));
    }
  } catch (const std::exception& e) {
    finding("exception from parse_estimate_request: " + ata::fuzz::type_name(e) + ": " + e.what());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  parse_and_check(body, EstimateLimits{});
  parse_and_check(body, EstimateLimits{EstimateLimits::kMostSamples, EstimateLimits::kMostBody});
  return 0;
}

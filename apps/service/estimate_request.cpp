#include "estimate_request.hpp"

#include <limits>
#include <nlohmann/json.hpp>

namespace ata::service {

namespace {

using Json = nlohmann::json;

constexpr std::size_t kQuotedValueChars = 32;
// Arrays and objects nested deeper are refused. A valid request nests one object; printing a
// value in an error message recurses, and a body of 16 MiB (--max-body's largest) could nest
// millions deep and overflow the stack.
constexpr int kMaxDepth = 32;

// The value as the client wrote it, cut short: enough to recognise, never a whole large body.
std::string quoted(const Json& value) {
  std::string text = value.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (text.size() > kQuotedValueChars) {
    // Cut between characters, not inside one: the message must stay valid UTF-8.
    std::size_t cut = kQuotedValueChars;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
    text = text.substr(0, cut) + "...";
  }
  return text;
}

RequestError bad_request(std::string message) { return {400, std::move(message)}; }

// A JSON whole number within [lowest, highest], or nothing.
std::optional<std::uint64_t> whole_number(const Json& value, std::uint64_t lowest,
                                          std::uint64_t highest) {
  std::uint64_t number = 0;
  if (value.is_number_unsigned()) {
    number = value.get<std::uint64_t>();
  } else if (value.is_number_integer()) {
    const auto signed_number = value.get<std::int64_t>();
    if (signed_number < 0) return std::nullopt;
    number = static_cast<std::uint64_t>(signed_number);
  } else {
    return std::nullopt;
  }
  if (number < lowest || number > highest) return std::nullopt;
  return number;
}

}  // namespace

std::variant<EstimateRequest, RequestError> parse_estimate_request(std::string_view body,
                                                                   const EstimateLimits& limits) {
  if (body.size() > limits.max_body) {
    return RequestError{413, "request body of " + std::to_string(body.size()) +
                                 " bytes is over the limit of " + std::to_string(limits.max_body) +
                                 " bytes"};
  }
  Json document;
  bool too_deep = false;
  // Skips (keeps out of the document) every array or object opened at depth kMaxDepth: the
  // parser itself does not recurse, the document then stays shallow.
  const auto limit_depth = [&too_deep](int depth, Json::parse_event_t event, Json& /*parsed*/) {
    if (depth >= kMaxDepth &&
        (event == Json::parse_event_t::object_start || event == Json::parse_event_t::array_start)) {
      too_deep = true;
      return false;
    }
    return true;
  };
  try {
    document = Json::parse(body, limit_depth);
  } catch (const Json::parse_error& e) {
    return bad_request("body is not valid JSON (error at byte " + std::to_string(e.byte) +
                       "); expected an object like {\"samples\": 32}");
  } catch (const Json::out_of_range&) {
    // The one other error of parsing: a number such as 1e400, beyond a double's range.
    return bad_request(
        "body has a number too large to represent (beyond 1.8e308); expected "
        "an object like {\"samples\": 32}");
  }
  if (too_deep) {
    return bad_request("body nests arrays and objects deeper than " + std::to_string(kMaxDepth) +
                       " levels; expected an object like {\"samples\": 32}");
  }
  if (!document.is_object()) {
    return bad_request("body must be a JSON object like {\"samples\": 32}, got " +
                       quoted(document));
  }
  EstimateRequest request;
  bool has_samples = false;
  for (const auto& [key, value] : document.items()) {
    if (key == "samples") {
      const auto samples = whole_number(value, 1, limits.max_samples);
      if (!samples) {
        return bad_request("'samples' must be a whole number from 1 to " +
                           std::to_string(limits.max_samples) + ", got " + quoted(value));
      }
      request.samples = static_cast<std::size_t>(*samples);
      has_samples = true;
    } else if (key == "seed") {
      const auto seed = whole_number(value, 0, std::numeric_limits<std::uint64_t>::max());
      if (!seed) return bad_request("'seed' must be a whole number >= 0, got " + quoted(value));
      request.seed = *seed;
    } else {
      return bad_request("unknown key " + quoted(Json(key)) + "; expected \"samples\" and " +
                         "optionally \"seed\"");
    }
  }
  if (!has_samples) return bad_request("missing key \"samples\" (tasks in the batch, e.g. 32)");
  return request;
}

}  // namespace ata::service

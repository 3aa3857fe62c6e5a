#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <string>
#include <variant>

#include "estimate_request.hpp"

using ata::service::EstimateLimits;
using ata::service::EstimateRequest;
using ata::service::parse_estimate_request;
using ata::service::RequestError;
using Catch::Matchers::ContainsSubstring;

namespace {

const EstimateLimits kLimits{64, 256};

EstimateRequest accepted(std::string_view body) {
  const auto parsed = parse_estimate_request(body, kLimits);
  REQUIRE(std::holds_alternative<EstimateRequest>(parsed));
  return std::get<EstimateRequest>(parsed);
}

RequestError refused(std::string_view body) {
  const auto parsed = parse_estimate_request(body, kLimits);
  REQUIRE(std::holds_alternative<RequestError>(parsed));
  return std::get<RequestError>(parsed);
}

}  // namespace

TEST_CASE("an estimate request names its samples and optionally a seed", "[service]") {
  const auto plain = accepted(R"({"samples": 32})");
  CHECK(plain.samples == 32);
  CHECK_FALSE(plain.seed.has_value());
  const auto seeded = accepted(R"( {"seed": 18446744073709551615, "samples": 64} )");
  CHECK(seeded.samples == 64);
  CHECK(seeded.seed == 18446744073709551615ULL);
  CHECK(accepted(R"({"samples": 1, "seed": 0})").seed == 0u);
  // -0 is 0 (JSON reads it as a signed integer; the fuzzer found the parser right, its check not).
  CHECK(accepted(R"({"samples": 4, "seed": -0})").seed == 0u);
}

TEST_CASE("a bad estimate request gets 400 naming the key and the value", "[service][errors]") {
  struct Case {
    const char* body;
    const char* expected;
  };
  const Case cases[] = {
      {R"({"samples": )", "not valid JSON (error at byte"},
      {"", "not valid JSON"},
      {R"([32])", "must be a JSON object"},
      {R"("samples")", "must be a JSON object"},
      {R"({"samples": 0})", "'samples' must be a whole number from 1 to 64, got 0"},
      {R"({"samples": 65})", "from 1 to 64, got 65"},
      {R"({"samples": -3})", "got -3"},
      {R"({"samples": 2.5})", "got 2.5"},
      {R"({"samples": 1e2})", "got 100.0"},
      {R"({"samples": "32"})", R"(got "32")"},
      {R"({"samples": true})", "got true"},
      {R"({"samples": null})", "got null"},
      {R"({"samples": 18446744073709551616})", "'samples' must be a whole number"},
      {R"({"samples": 1e400})", "a number too large to represent"},
      {R"({"samples": 4, "seed": -1e999})", "a number too large to represent"},
      {R"({"seed": 1})", "missing key \"samples\""},
      {R"({})", "missing key \"samples\""},
      {R"({"samples": 4, "seed": -1})", "'seed' must be a whole number >= 0, got -1"},
      {R"({"samples": 4, "seed": "x"})", R"('seed' must be a whole number >= 0, got "x")"},
      {R"({"samples": 4, "sample": 4})", R"(unknown key "sample")"},
  };
  for (const auto& c : cases) {
    INFO(c.body);
    const auto error = refused(c.body);
    CHECK(error.status == 400);
    CHECK_THAT(error.message, ContainsSubstring(c.expected));
  }
}

TEST_CASE("a quoted value is cut short and stays valid text", "[service][errors]") {
  const std::string long_value = R"({"samples": ")" + std::string(150, 'x') + R"("})";
  const auto error = refused(long_value);
  CHECK_THAT(error.message, ContainsSubstring("xxx..."));
  CHECK(error.message.size() < 120);
  const auto bad_utf8 = refused("{\"samples\": \"\xff\"}");
  CHECK(bad_utf8.status == 400);
  // A two-byte character across the cut (found by fuzz_estimate_request): the cut goes before
  // it, never between its bytes.
  const std::string key = std::string(30, 'a') + "\xc4\xbc" + std::string(10, 'b');
  const auto across = refused("{\"" + key + "\": 8}");
  CHECK_THAT(across.message, ContainsSubstring("\"" + std::string(30, 'a') + "..."));
  CHECK(across.message.find('\xc4') == std::string::npos);
}

TEST_CASE("a body over the limit gets 413 before it is parsed", "[service][errors]") {
  const std::string body = R"({"samples": 1, "pad": ")" + std::string(300, ' ') + R"("})";
  const auto error = refused(body);
  CHECK(error.status == 413);
  CHECK_THAT(error.message, ContainsSubstring("over the limit of 256 bytes"));
}

TEST_CASE("a body nested deeper than 32 arrays and objects gets 400, however deep",
          "[service][errors]") {
  // Printing the value for the message recursed once per level: 100,000 levels (200 KB, within
  // --max-body's largest) overflowed the stack (fuzz/regressions/fuzz_estimate_request/).
  const EstimateLimits large{64, 1 << 20};
  for (const std::size_t depth : {33u, 100000u}) {
    INFO("depth " << depth);
    const std::string nested = std::string(depth, '[') + std::string(depth, ']');
    for (const std::string& body : {nested, R"({"samples": )" + nested + "}"}) {
      const auto parsed = parse_estimate_request(body, large);
      REQUIRE(std::holds_alternative<RequestError>(parsed));
      CHECK(std::get<RequestError>(parsed).status == 400);
      CHECK_THAT(std::get<RequestError>(parsed).message,
                 ContainsSubstring("nests arrays and objects deeper than 32 levels"));
    }
  }
  // 32 levels are within the limit: the value is quoted, cut short.
  const auto shallow =
      refused(R"({"samples": )" + std::string(31, '[') + std::string(31, ']') + "}");
  CHECK_THAT(shallow.message, ContainsSubstring("got [[[["));
}

// ata-serve as a process on 127.0.0.1 with an ephemeral port, driven over HTTP.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cctype>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string_view>
#include <string>
#include <thread>
#include <vector>

#include "load_client.hpp"
#include "server_process.hpp"

using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::StartsWith;
using namespace std::chrono_literals;
namespace svc = ata::service;

namespace {

// The length of the metric (or, without colons, label) name that `text` starts with; 0 if none.
std::size_t name_length(std::string_view text, bool colons) {
  const auto first = [&](char c) {
    return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_' || (colons && c == ':');
  };
  if (text.empty() || !first(text[0])) return 0;
  std::size_t n = 1;
  while (n < text.size() &&
         (first(text[n]) || std::isdigit(static_cast<unsigned char>(text[n])) != 0)) {
    ++n;
  }
  return n;
}

// One line of Prometheus's text exposition format: "# HELP name text", "# TYPE name type", or
// a sample "name{label="value",...} number". Matched by hand: g++ 12's <regex> trips
// -Wmaybe-uninitialized in the sanitizer builds.
bool is_exposition_line(std::string_view line) {
  for (const std::string_view comment : {"# HELP ", "# TYPE "}) {
    if (!line.starts_with(comment)) continue;
    const std::string_view rest = line.substr(comment.size());
    const std::size_t n = name_length(rest, true);
    if (n == 0 || rest.size() <= n + 1 || rest[n] != ' ') return false;
    const std::string_view tail = rest.substr(n + 1);
    return comment == "# HELP " || tail == "counter" || tail == "gauge" || tail == "histogram";
  }
  std::size_t n = name_length(line, true);
  if (n == 0) return false;
  std::string_view rest = line.substr(n);
  if (rest.starts_with('{')) {
    rest.remove_prefix(1);
    for (;;) {
      n = name_length(rest, false);
      if (n == 0 || rest.substr(n, 2) != "=\"") return false;
      rest.remove_prefix(n + 2);
      const std::size_t quote = rest.find_first_of("\"\\");
      if (quote == std::string_view::npos || rest[quote] != '"') return false;
      rest.remove_prefix(quote + 1);
      if (rest.starts_with(',')) {
        rest.remove_prefix(1);
        continue;
      }
      if (!rest.starts_with('}')) return false;
      rest.remove_prefix(1);
      break;
    }
  }
  if (!rest.starts_with(' ')) return false;
  const std::string_view value = rest.substr(1);
  if (value == "+Inf") return true;
  // -?[0-9.]+(e[-+]?[0-9]+)?
  const auto digits = [&](std::size_t from, bool dots) {
    std::size_t at = from;
    while (at < value.size() &&
           (std::isdigit(static_cast<unsigned char>(value[at])) != 0 || (dots && value[at] == '.'))) {
      ++at;
    }
    return at;
  };
  std::size_t at = value.starts_with('-') ? 1 : 0;
  const std::size_t mantissa = digits(at, true);
  if (mantissa == at) return false;
  if (mantissa == value.size()) return true;
  if (value[mantissa] != 'e') return false;
  at = mantissa + 1;
  if (at < value.size() && (value[at] == '-' || value[at] == '+')) ++at;
  const std::size_t exponent = digits(at, false);
  return exponent > at && exponent == value.size();
}

constexpr auto kReplyTimeout = 30s;

// A small cluster; `unit_us` sets how long a batch takes (linear preset: worker i's mean task
// time is 58 i units).
svc::ServerProcess start_server(const std::string& unit_us, std::vector<std::string> extra = {}) {
  std::vector<std::string> arguments{
      "--port", "0",       "--scenario", "linear",        "--workers", "4",          "--unit-us",
      unit_us,  "--draws", "2000",       "--max-samples", "64",        "--max-body", "256"};
  arguments.insert(arguments.end(), extra.begin(), extra.end());
  return svc::ServerProcess(ATA_SERVE_PROGRAM, arguments);
}

svc::HttpReply exchange(const svc::ServerProcess& server, std::string_view method,
                        std::string_view target, std::string body = {}) {
  return svc::http_exchange("127.0.0.1", server.port(), method, target, std::move(body),
                            kReplyTimeout);
}

nlohmann::json json_of(const svc::HttpReply& reply) {
  auto parsed = nlohmann::json::parse(reply.body, nullptr, false);
  REQUIRE_FALSE(parsed.is_discarded());
  return parsed;
}

// The value of one sample line of a Prometheus text, e.g. metric(text, "ata_batches_in_flight").
std::optional<double> metric(const std::string& text, const std::string& series) {
  const std::string prefix = series + " ";
  std::size_t at = 0;
  while ((at = text.find(prefix, at)) != std::string::npos) {
    if (at == 0 || text[at - 1] == '\n') return std::stod(text.substr(at + prefix.size()));
    at += prefix.size();
  }
  return std::nullopt;
}

// Polls the server's /metrics until `series` reaches `value`; false after `limit`.
bool metric_reaches(const svc::ServerProcess& server, const std::string& series, double value,
                    std::chrono::milliseconds limit = 20s) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    const auto text = exchange(server, "GET", "/metrics").body;
    if (metric(text, series).value_or(-1.0) >= value) return true;
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

// A raw TCP connection, for what a well-behaved client would never send.
class RawConnection {
 public:
  explicit RawConnection(std::uint16_t port) : fd_(socket(AF_INET, SOCK_STREAM, 0)) {
    REQUIRE(fd_ >= 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(connect(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0);
    timeval timeout{30, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  }
  ~RawConnection() { close_now(); }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  void send_text(const std::string& text) {
    REQUIRE(::send(fd_, text.data(), text.size(), MSG_NOSIGNAL) ==
            static_cast<ssize_t>(text.size()));
  }
  // Everything until the server closes the connection (or 30 s pass).
  std::string read_all() {
    std::string out;
    char chunk[4096];
    for (;;) {
      const ssize_t got = recv(fd_, chunk, sizeof chunk, 0);
      if (got <= 0) break;
      out.append(chunk, static_cast<std::size_t>(got));
    }
    return out;
  }
  void close_now() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

std::string estimate_request(std::size_t samples) {
  const std::string body = R"({"samples": )" + std::to_string(samples) + "}";
  return "POST /estimate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
         "Content-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

}  // namespace

TEST_CASE("ata-serve prices an option with one batch per request", "[service]") {
  auto server = start_server("10");
  CHECK_THAT(server.first_line(), StartsWith("ata-serve: listening on 127.0.0.1:"));
  const auto reply = exchange(server, "POST", "/estimate", R"({"samples": 32, "seed": 5})");
  REQUIRE(reply.status == 200);
  const auto body = json_of(reply);
  CHECK(body["samples"] == 32);
  CHECK(body["results"].size() == 32);
  CHECK(body["draws"] == 32 * 2000);
  CHECK(body["seed"] == 5);
  const double estimate = body["estimate"].get<double>();
  const double error = body["standard_error"].get<double>();
  const double exact = body["black_scholes"].get<double>();
  CHECK(error > 0.0);
  CHECK(error < 0.2);
  CHECK(std::abs(estimate - exact) < 5.0 * error);
  std::size_t allocated = 0;
  for (const auto& a : body["batch"]["allocation"]) allocated += a.get<std::size_t>();
  CHECK(allocated == 32);
  CHECK(body["batch"]["round"] == 1);
  CHECK(body["batch"]["strategy"] == "ata-auto");
  CHECK(body["batch"]["worker_seconds"].get<double>() > 0.0);
  // The objective at the default price 1/n.
  const double price = body["batch"]["work_price"].get<double>();
  CHECK(price > 0.0);
  const double objective = body["batch"]["wall_seconds"].get<double>() +
                           price * body["batch"]["worker_seconds"].get<double>();
  CHECK(std::abs(body["batch"]["objective_seconds"].get<double>() - objective) <= 1e-12 * objective);

  // The same seed gives the same estimate: every task draws from its own stream.
  const auto again =
      json_of(exchange(server, "POST", "/estimate", R"({"samples": 32, "seed": 5})"));
  CHECK(again["estimate"] == body["estimate"]);

  const auto stats = json_of(exchange(server, "GET", "/stats"));
  REQUIRE(stats["workers"].size() == 4);
  CHECK(stats["batches"]["completed"] == 2);
  std::size_t observed = 0;
  for (const auto& w : stats["workers"]) observed += w["observations"].get<std::size_t>();
  CHECK(observed == 64);
  const auto metrics = exchange(server, "GET", "/metrics");
  CHECK(metric(metrics.body, "ata_http_responses_total{code=\"200\"}") == 3.0);
  CHECK(metric(metrics.body, "ata_batch_wall_seconds_count") == 2.0);
  CHECK(metric(metrics.body, "ata_batches_total{outcome=\"succeeded\"}") == 2.0);
  CHECK(metric(metrics.body, "ata_tasks_total{outcome=\"accepted\"}") == 64.0);
  // The text exposition format, line by line, every name in base units by convention.
  std::istringstream lines(metrics.body);
  std::size_t samples = 0;
  for (std::string line; std::getline(lines, line);) {
    INFO(line);
    CHECK(is_exposition_line(line));
    samples += line.starts_with('#') ? 0 : 1;
  }
  CHECK(samples > 50);
  CHECK(json_of(exchange(server, "GET", "/healthz"))["status"] == "ok");
  CHECK(server.stop(20s) == 0);
  CHECK_THAT(server.output(), ContainsSubstring("stopped after 5 responses"));
}

TEST_CASE("ata-serve --trace writes the first and last batches at shutdown", "[service]") {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("ata-serve-trace-" + std::to_string(::getpid()) + ".json"))
                               .string();
  auto server = start_server("1", {"--trace", path, "--trace-rounds", "1"});
  for (int k = 0; k < 3; ++k) {
    REQUIRE(exchange(server, "POST", "/estimate", R"({"samples": 6})").status == 200);
  }
  CHECK(server.stop(20s) == 0);
  CHECK_THAT(server.output(), ContainsSubstring("wrote " + path +
                                                ": 1 strategy x 2 rounds, 12 task slices"));
  std::ifstream file(path);
  const auto trace = nlohmann::json::parse(file, nullptr, false);
  std::remove(path.c_str());
  REQUIRE_FALSE(trace.is_discarded());
  std::vector<std::size_t> rounds;
  std::size_t slices = 0;
  for (const auto& event : trace["traceEvents"]) {
    if (event["ph"] != "X") continue;
    if (event["cat"] == "round") {
      rounds.push_back(event["args"]["round"].get<std::size_t>());
    } else {
      ++slices;
      CHECK(event["tid"].get<std::size_t>() < 4);
    }
  }
  CHECK(rounds == std::vector<std::size_t>{1, 3});
  CHECK(slices == 12);
}

TEST_CASE("ata-serve answers bad input with a 4xx JSON error and keeps serving",
          "[service][errors]") {
  auto server = start_server("10");
  struct Case {
    const char* method;
    const char* target;
    std::string body;
    unsigned status;
    const char* expected;
  };
  const std::vector<Case> cases{
      {"POST", "/estimate", R"({"samples": )", 400, "not valid JSON"},
      {"POST", "/estimate", R"({"samples": "32"})", 400, R"('samples' must be a whole number)"},
      {"POST", "/estimate", R"({"samples": 32, "seed": 1.5})", 400, "'seed' must be"},
      {"POST", "/estimate", R"({"samples": 0})", 400, "from 1 to 64, got 0"},
      {"POST", "/estimate", R"({"samples": 65})", 400, "from 1 to 64, got 65"},
      {"POST", "/estimate", R"({"samples": 1e400})", 400, "a number too large"},
      {"POST", "/estimate", std::string(40, '[') + std::string(40, ']'), 400, "deeper than 32"},
      {"POST", "/estimate", R"({"samples": 1, "pad": ")" + std::string(300, 'x') + R"("})", 413,
       "over the limit of 256 bytes"},
      {"GET", "/nowhere", "", 404, "no such path \"/nowhere\""},
      {"GET", "/estimate", "", 405, "method GET is not allowed on /estimate; use POST"},
      {"POST", "/stats", "{}", 405, "use GET"},
      {"DELETE", "/metrics", "", 405, "use GET"},
  };
  for (const auto& c : cases) {
    INFO(c.method << " " << c.target << " " << c.body.substr(0, 40));
    const auto reply = exchange(server, c.method, c.target, c.body);
    CHECK(reply.status == c.status);
    const auto body = json_of(reply);
    CHECK(body["status"] == c.status);
    CHECK_THAT(body["error"].get<std::string>(), ContainsSubstring(c.expected));
  }

  {
    RawConnection raw(server.port());
    raw.send_text("NOT HTTP AT ALL\r\n\r\n");
    const auto text = raw.read_all();
    CHECK_THAT(text, StartsWith("HTTP/1.1 400 Bad Request"));
    CHECK_THAT(text, ContainsSubstring("malformed HTTP request"));
  }
  {
    RawConnection raw(server.port());  // a chunked body: no Content-Length to refuse it early
    raw.send_text(
        "POST /estimate HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n200\r\n" +
        std::string(0x200, ' ') + "\r\n0\r\n\r\n");
    CHECK_THAT(raw.read_all(), StartsWith("HTTP/1.1 413 Payload Too Large"));
  }
  const auto good = exchange(server, "POST", "/estimate", R"({"samples": 4})");
  CHECK(good.status == 200);
  CHECK(server.stop(20s) == 0);
}

TEST_CASE("a client that disconnects mid-request cancels its batch", "[service]") {
  // 64 tasks on 4 workers with means of 58..232 ms: the batch runs for about a second.
  auto server = start_server("1000");
  {
    RawConnection raw(server.port());
    raw.send_text(estimate_request(64));
    REQUIRE(metric_reaches(server, "ata_batches_in_flight", 1.0));
  }  // closed with the batch running
  REQUIRE(metric_reaches(server, "ata_batches_total{outcome=\"cancelled\"}", 1.0));
  const auto text = exchange(server, "GET", "/metrics").body;
  CHECK(metric(text, "ata_batches_in_flight") == 0.0);
  CHECK(metric(text, "ata_batches_total{outcome=\"succeeded\"}") == 0.0);
  // Nothing was answered for the cancelled batch, and the server goes on serving.
  CHECK_FALSE(metric(text, "ata_http_responses_total{code=\"503\"}").has_value());
  CHECK(exchange(server, "POST", "/estimate", R"({"samples": 4})").status == 200);
  CHECK(server.stop(20s) == 0);
}

TEST_CASE("a batch past its deadline is answered with 503", "[service]") {
  auto server = start_server("1000", {"--batch-deadline-ms", "50"});
  const auto reply = exchange(server, "POST", "/estimate", R"({"samples": 64})");
  CHECK(reply.status == 503);
  CHECK_THAT(json_of(reply)["error"].get<std::string>(),
             ContainsSubstring("the batch passed its deadline of 50 ms"));
  const auto text = exchange(server, "GET", "/metrics").body;
  CHECK(metric(text, "ata_batches_total{outcome=\"timed_out\"}") == 1.0);
  CHECK(metric(text, "ata_batches_in_flight") == 0.0);
  CHECK(server.stop(20s) == 0);
}

TEST_CASE("SIGTERM lets the batches in flight finish within the grace period", "[service]") {
  auto server = start_server("200", {"--grace-ms", "10000"});
  std::vector<std::future<svc::HttpReply>> replies;
  for (int k = 0; k < 4; ++k) {
    replies.push_back(std::async(std::launch::async, [&] {
      return exchange(server, "POST", "/estimate", R"({"samples": 48})");
    }));
  }
  REQUIRE(metric_reaches(server, "ata_batches_in_flight", 4.0));
  const auto signalled = std::chrono::steady_clock::now();
  server.send_signal(SIGTERM);
  const auto code = server.wait(30s);
  REQUIRE(code.has_value());
  CHECK(*code == 0);
  CHECK(std::chrono::steady_clock::now() - signalled < 10s);
  for (auto& reply : replies) CHECK(reply.get().status == 200);
  // Stopped accepting: nobody listens on the port any more.
  CHECK_THROWS(exchange(server, "GET", "/healthz"));
}

TEST_CASE("SIGTERM past the grace period cancels the batches in flight with 503", "[service]") {
  auto server = start_server("1000", {"--grace-ms", "0"});
  std::vector<std::future<svc::HttpReply>> replies;
  for (int k = 0; k < 3; ++k) {
    replies.push_back(std::async(std::launch::async, [&] {
      return exchange(server, "POST", "/estimate", R"({"samples": 64})");
    }));
  }
  REQUIRE(metric_reaches(server, "ata_batches_in_flight", 3.0));
  server.send_signal(SIGTERM);
  const auto code = server.wait(30s);
  REQUIRE(code.has_value());
  CHECK(*code == 0);
  for (auto& future : replies) {
    const auto reply = future.get();
    CHECK(reply.status == 503);
    CHECK_THAT(json_of(reply)["error"].get<std::string>(),
               ContainsSubstring("shutting down; the batch was cancelled"));
  }
}

TEST_CASE("ata-serve refuses a port it cannot bind with one line naming it", "[service][errors]") {
  auto first = start_server("10");
  CHECK_THROWS_WITH(start_server("10", {"--port", std::to_string(first.port())}),
                    ContainsSubstring("exited before printing its port"));
  CHECK(first.stop(20s) == 0);
}

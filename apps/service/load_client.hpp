#pragma once
// ata-load's HTTP client: single requests, and open-loop runs in which each request is sent at
// its scheduled arrival time over a bounded pool of keep-alive connections. The header is free
// of Asio and Beast; load_client.cpp is the one translation unit of ata-load that includes them.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace ata::service {

/// The IP address to connect to for `host`: a loopback address (127.0.0.0/8, ::1) as given, or
/// 127.0.0.1 for "localhost". Throws ata::InvalidArgument for anything else: ata-load sends
/// load over loopback only.
[[nodiscard]] std::string loopback_address(const std::string& host);

struct HttpReply {
  unsigned status = 0;
  std::string body;
};

/// One request on a fresh connection to loopback_address(host):port. Throws ata::Error naming
/// the target when it cannot connect, the exchange fails, or it takes longer than `timeout`.
[[nodiscard]] HttpReply http_exchange(const std::string& host, std::uint16_t port,
                                      std::string_view method, std::string_view target,
                                      std::string body, std::chrono::milliseconds timeout);

/// What an open-loop run sends.
struct OpenLoopPlan {
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;
  std::vector<double> arrivals;  ///< send times, seconds from the start, ascending
  std::size_t samples_min = 16;  ///< each request asks for B uniform in [min, max]
  std::size_t samples_max = 16;
  std::uint64_t seed = 1;                    ///< draws each B and each request's "seed"
  std::size_t connections = 64;              ///< open at most; a request waits for a free one
  std::chrono::milliseconds timeout{10000};  ///< per request, from its scheduled arrival
};

/// One request of a run. Latencies count from the scheduled arrival, so time spent waiting for
/// a free connection is included (the measurement stays open-loop).
struct RequestOutcome {
  double scheduled = 0.0;  ///< seconds from the start
  double finished = 0.0;   ///< seconds from the start (0 if it never finished)
  double latency = 0.0;    ///< finished - scheduled
  unsigned status = 0;     ///< HTTP status; 0 when there was no reply
  std::string error;       ///< empty for 200; else "timeout", "connection", "HTTP 503", ...
  std::size_t samples = 0;
  double worker_seconds = 0.0;  ///< from the reply's batch report
  double batch_seconds = 0.0;   ///< the server's latency_seconds: the batch, start to end
};

struct OpenLoopResult {
  std::vector<RequestOutcome> requests;  ///< by arrival
  double elapsed = 0.0;                  ///< from the start to the last reply
};

/// Runs `plan` on the calling thread and returns when every request has a reply or has timed
/// out: at most the last arrival plus plan.timeout (plus one connection attempt). `progress`
/// (optional) gets (finished, total) after each request. Throws ata::InvalidArgument for a
/// non-loopback host, no connections, or samples_min > samples_max or 0.
[[nodiscard]] OpenLoopResult run_open_loop(
    const OpenLoopPlan& plan, const std::function<void(std::size_t, std::size_t)>& progress = {});

}  // namespace ata::service

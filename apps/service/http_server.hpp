#pragma once
// ata-serve's HTTP/1.1 server (Boost.Beast on the async API): each POST /estimate runs as one
// batch on a BatchScheduler. The header is free of Asio and Beast, so only http_server.cpp pays
// for compiling them.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "ata/runtime/batch_scheduler.hpp"
#include "estimate_request.hpp"
#include "option_pricing.hpp"
#include "service_metrics.hpp"

namespace ata::service {

struct ServerConfig {
  std::string listen = "127.0.0.1";   ///< an IP address
  std::uint16_t port = 0;             ///< 0: an ephemeral port (see HttpServer::port())
  std::size_t threads = 1;            ///< threads running the I/O
  std::size_t max_connections = 256;  ///< past it, a new connection is closed at once
  EstimateLimits limits;
  std::chrono::milliseconds grace{5000};        ///< after SIGINT/SIGTERM, before cancelling
  std::chrono::milliseconds batch_deadline{0};  ///< 0: none
  std::size_t draws = 4000;                     ///< Monte Carlo draws per task
  EuropeanCall option;
  std::uint64_t seed = 1;  ///< requests without a seed get seeds drawn from this one
  std::string strategy;    ///< the policy's name, echoed in every reply
  /// The price of a worker-second in wall-seconds (resolved: --work-price, or 1/n): every
  /// reply's batch reports wall + work_price x worker seconds as "objective_seconds".
  double work_price = 0.0;
};

/// The server. Construction binds the port (so port() is known before run()) and takes over
/// SIGINT and SIGTERM; run() serves until one arrives, then stops accepting, closes idle
/// connections, lets the batches in flight finish for config.grace, cancels those still
/// running (their clients get 503), and returns once every connection is closed.
///
/// @code
/// ata::service::HttpServer server(config, scheduler, metrics);
/// std::printf("ata-serve: listening on %s\n", server.endpoint().c_str());
/// server.run();
/// @endcode
///
/// Not thread-safe: one thread constructs it and calls run(). `scheduler` and `metrics` must
/// outlive it.
class HttpServer {
 public:
  /// Throws ata::InvalidArgument for an address that is not an IP address or a port that
  /// cannot be bound (naming it and why).
  HttpServer(const ServerConfig& config, runtime::BatchScheduler& scheduler,
             ServiceMetrics& metrics);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  /// The bound port.
  [[nodiscard]] std::uint16_t port() const noexcept;
  /// "ADDRESS:PORT" ("[ADDRESS]:PORT" for IPv6).
  [[nodiscard]] std::string endpoint() const;
  /// Serves until SIGINT/SIGTERM and the drain that follows.
  void run();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ata::service

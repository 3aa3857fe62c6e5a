#include "http_server.hpp"

#include <utility>  // before Asio: g++ 12's libstdc++ needs it for Asio's headers

#include <array>
#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <csignal>
#include <cstdio>
#include <exception>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>
#include <unordered_set>
#include <variant>
#include <vector>

#include "ata/core/error.hpp"
#include "ata/runtime/async_run.hpp"
#include "ata/runtime/shutdown_error.hpp"
#include "estimate_reply.hpp"

namespace ata::service {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Request = http::request<http::string_body>;
using Response = http::response<http::string_body>;
constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);

// A keep-alive connection may wait this long for its next request.
constexpr auto kIdleTimeout = std::chrono::seconds(30);
// Reading one request's body, or writing one reply, to a slow peer.
constexpr auto kTransferTimeout = std::chrono::seconds(30);
constexpr std::uint32_t kHeaderLimit = 8 * 1024;
// After the last reply, how long and how much of the client's leftover bytes are read away.
constexpr auto kLingerTimeout = std::chrono::seconds(1);
constexpr std::size_t kLingerBytes = 1024 * 1024;
// A path quoted back in a 404 is cut to this length.
constexpr std::size_t kQuotedPathChars = 64;

enum class CancelReason { none, client_gone, shutdown };

// One client connection. Every field but `stream`'s internals is touched only on the
// connection's strand (the stream's executor).
struct Connection {
  explicit Connection(tcp::socket socket) : stream(std::move(socket)) {}
  beast::tcp_stream stream;
  bool serving = false;  // from a request's header until its reply is written
  bool batch_running = false;
  std::uint64_t batches = 0;  // numbers the batches, so a stale disconnect watch is ignored
  CancelReason cancel_reason = CancelReason::none;
  asio::cancellation_signal cancel;
};

Response make_response(http::status status, unsigned version, std::string content_type,
                       std::string body) {
  Response response{status, version};
  response.set(http::field::server, "ata-serve");
  response.set(http::field::content_type, std::move(content_type));
  response.body() = std::move(body);
  return response;
}

Response json_response(http::status status, unsigned version, const nlohmann::json& body) {
  return make_response(status, version, "application/json", json_text(body) + "\n");
}

Response error_response(unsigned status, unsigned version, std::string_view message) {
  return json_response(static_cast<http::status>(status), version, error_reply(status, message));
}

bool is_http_parse_error(const beast::error_code& ec) {
  return ec.category() == beast::error_code(http::error::bad_version).category() &&
         ec != http::error::end_of_stream && ec != http::error::partial_message;
}

// Watches a connection while its batch runs, without consuming any bytes: end of stream (or an
// error) means the client is gone, and the batch is cancelled. Bytes of a pipelined request
// mean the client is still there, and the watch ends.
void watch_for_disconnect(const std::shared_ptr<Connection>& c, std::uint64_t batch) {
  c->stream.socket().async_wait(tcp::socket::wait_read, [c, batch](const beast::error_code& ec) {
    if (ec || !c->batch_running || c->batches != batch) return;
    char byte = 0;
    beast::error_code peek_error;
    c->stream.socket().non_blocking(true, peek_error);
    const std::size_t peeked =
        c->stream.socket().receive(asio::buffer(&byte, 1), tcp::socket::message_peek, peek_error);
    if (peek_error == asio::error::would_block || peek_error == asio::error::try_again) {
      watch_for_disconnect(c, batch);
      return;
    }
    if (!peek_error && peeked > 0) return;
    c->cancel_reason = CancelReason::client_gone;
    c->cancel.emit(asio::cancellation_type::terminal);
  });
}

void log_stray_exception(std::exception_ptr error) {
  if (!error) return;
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ata-serve: a connection ended on an internal error: %s\n", e.what());
  }
}

}  // namespace

struct HttpServer::Impl {
  Impl(const ServerConfig& c, runtime::BatchScheduler& s, ServiceMetrics& m)
      : config(c),
        scheduler(s),
        metrics(m),
        io(static_cast<int>(c.threads)),
        control(asio::make_strand(io)),
        acceptor(control),
        signals(control, SIGINT, SIGTERM),
        grace_timer(control) {}

  void open(const asio::ip::address& address);
  asio::awaitable<void> accept_loop();
  asio::awaitable<void> serve(std::shared_ptr<Connection> c);
  asio::awaitable<std::optional<Response>> respond(std::shared_ptr<Connection> c,
                                                   const Request& request);
  asio::awaitable<std::optional<Response>> estimate(std::shared_ptr<Connection> c,
                                                    const Request& request);
  void on_signal(const beast::error_code& ec);
  void cancel_batches();
  void forget(const std::shared_ptr<Connection>& c);
  void finish_if_drained();
  std::vector<std::shared_ptr<Connection>> snapshot();

  ServerConfig config;
  runtime::BatchScheduler& scheduler;
  ServiceMetrics& metrics;
  asio::io_context io;
  asio::strand<asio::io_context::executor_type> control;  // acceptor, signals, grace timer
  tcp::acceptor acceptor;
  asio::signal_set signals;
  asio::steady_timer grace_timer;
  std::atomic<bool> stopping{false};
  std::atomic<bool> grace_over{false};  // batches starting now would never be cancelled
  std::atomic<std::uint64_t> unseeded_requests{0};
  std::mutex connections_mutex;
  std::unordered_set<std::shared_ptr<Connection>> connections;
};

void HttpServer::Impl::open(const asio::ip::address& address) {
  const tcp::endpoint endpoint(address, config.port);
  const std::string where = address.to_string() + ":" + std::to_string(config.port);
  beast::error_code ec;
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) throw InvalidArgument("cannot listen on " + where + ": " + ec.message());
}

asio::awaitable<void> HttpServer::Impl::accept_loop() {
  while (!stopping) {
    auto [ec, socket] = co_await acceptor.async_accept(asio::make_strand(io), kTuple);
    if (ec) {
      if (!acceptor.is_open()) co_return;
      // Out of descriptors and the like: pause rather than spin on the error.
      asio::steady_timer pause(control, std::chrono::milliseconds(50));
      co_await pause.async_wait(kTuple);
      continue;
    }
    std::shared_ptr<Connection> connection;
    {
      const std::lock_guard lock(connections_mutex);
      if (connections.size() < config.max_connections) {
        connection = std::make_shared<Connection>(std::move(socket));
        connections.insert(connection);
      }
    }
    if (!connection) {
      metrics.count_refused_connection();
      beast::error_code ignored;
      socket.close(ignored);
      continue;
    }
    asio::co_spawn(connection->stream.get_executor(), serve(connection), log_stray_exception);
  }
}

asio::awaitable<void> HttpServer::Impl::serve(std::shared_ptr<Connection> c) {
  beast::flat_buffer buffer;
  bool linger = false;
  std::array<char, 4096> scratch;
  while (!stopping) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(kHeaderLimit);
    parser.body_limit(config.limits.max_body);
    c->stream.expires_after(kIdleTimeout);
    auto [header_error, header_bytes] =
        co_await http::async_read_header(c->stream, buffer, parser, kTuple);
    std::optional<Response> response;
    bool close_after = false;
    if (header_error == http::error::body_limit) {
      // The parser compares a Content-Length with the body limit as soon as it reads the header.
      response = error_response(
          413, 11,
          "request body of " + std::to_string(parser.content_length().value_or(0)) +
              " bytes is over the limit of " + std::to_string(config.limits.max_body) + " bytes");
      close_after = true;
    } else if (header_error) {
      if (!is_http_parse_error(header_error)) break;
      const unsigned status = header_error == http::error::header_limit ? 431 : 400;
      response = error_response(status, 11, "malformed HTTP request");
      close_after = true;
    }
    c->serving = true;
    const unsigned version = response ? 11 : parser.get().version();
    if (!response) {
      if (beast::iequals(parser.get()[http::field::expect], "100-continue")) {
        http::response<http::empty_body> go_on{http::status::continue_, version};
        c->stream.expires_after(kTransferTimeout);
        auto [continue_error, continue_bytes] =
            co_await http::async_write(c->stream, go_on, kTuple);
        if (continue_error) break;
      }
      c->stream.expires_after(kTransferTimeout);
      auto [body_error, body_bytes] = co_await http::async_read(c->stream, buffer, parser, kTuple);
      if (body_error == http::error::body_limit) {
        response = error_response(413, version,
                                  "request body is over the limit of " +
                                      std::to_string(config.limits.max_body) + " bytes");
        close_after = true;
      } else if (is_http_parse_error(body_error)) {
        response = error_response(400, version, "malformed HTTP request body");
        close_after = true;
      } else if (body_error) {
        break;
      } else {
        response = co_await respond(c, parser.get());
        if (!response) break;  // the client is gone: nobody to answer
        close_after = !parser.get().keep_alive();
      }
    }
    response->keep_alive(!close_after && !stopping);
    response->prepare_payload();
    metrics.count_response(response->result_int());
    c->stream.expires_after(kTransferTimeout);
    auto [write_error, written] = co_await http::async_write(c->stream, *response, kTuple);
    c->serving = false;
    if (write_error) break;
    if (!response->keep_alive()) {
      linger = true;
      break;
    }
  }
  c->serving = false;
  beast::error_code ignored;
  c->stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
  if (linger) {
    // Closing with unread bytes (a refused body) would reset the connection, and the client
    // could lose the reply before reading it: read and drop what it still sends, for a while.
    c->stream.expires_after(kLingerTimeout);
    std::size_t dropped = 0;
    while (dropped < kLingerBytes) {
      auto [drop_error, got] = co_await c->stream.async_read_some(asio::buffer(scratch), kTuple);
      if (drop_error) break;
      dropped += got;
    }
  }
  c->stream.close();
  forget(c);
}

asio::awaitable<std::optional<Response>> HttpServer::Impl::respond(std::shared_ptr<Connection> c,
                                                                   const Request& request) {
  const std::string_view target = request.target();
  const std::string_view path = target.substr(0, target.find('?'));
  const unsigned version = request.version();
  const auto wrong_method = [&](const char* allowed) {
    Response response =
        error_response(405, version,
                       "method " + std::string(request.method_string()) + " is not allowed on " +
                           std::string(path) + "; use " + allowed);
    response.set(http::field::allow, allowed);
    return response;
  };
  if (path == "/estimate") {
    if (request.method() != http::verb::post) co_return wrong_method("POST");
    co_return co_await estimate(std::move(c), request);
  }
  if (path == "/stats" || path == "/metrics" || path == "/healthz") {
    if (request.method() != http::verb::get) co_return wrong_method("GET");
    if (path == "/stats") co_return json_response(http::status::ok, version, metrics.stats_json());
    if (path == "/metrics") {
      co_return make_response(http::status::ok, version, "text/plain; version=0.0.4",
                              metrics.prometheus_text());
    }
    co_return json_response(http::status::ok, version, {{"status", "ok"}});
  }
  std::string quoted(path.substr(0, kQuotedPathChars));
  if (path.size() > kQuotedPathChars) quoted += "...";
  co_return error_response(404, version,
                           "no such path " + json_text(quoted) +
                               "; expected POST /estimate, GET /stats, GET /metrics or "
                               "GET /healthz");
}

asio::awaitable<std::optional<Response>> HttpServer::Impl::estimate(std::shared_ptr<Connection> c,
                                                                    const Request& request) {
  const unsigned version = request.version();
  const auto parsed = parse_estimate_request(request.body(), config.limits);
  if (const auto* refused = std::get_if<RequestError>(&parsed)) {
    co_return error_response(refused->status, version, refused->message);
  }
  if (grace_over) co_return error_response(503, version, "the server is shutting down");
  const auto& wanted = std::get<EstimateRequest>(parsed);
  const std::uint64_t seed =
      wanted.seed ? *wanted.seed : models::Rng(config.seed, unseeded_requests.fetch_add(1))();
  auto task = [option = config.option, draws = config.draws,
               seed](const runtime::TaskContext& ctx) {
    models::Rng rng(seed, ctx.task());
    return price_paths(option, draws, rng, ctx.stop_token());
  };

  const std::uint64_t batch = ++c->batches;
  c->batch_running = true;
  c->cancel_reason = CancelReason::none;
  watch_for_disconnect(c, batch);
  metrics.batch_started();
  const auto start = std::chrono::steady_clock::now();
  auto [error, result] = co_await runtime::async_run(
      scheduler, wanted.samples, std::move(task), runtime::BatchOptions{config.batch_deadline},
      asio::bind_cancellation_slot(c->cancel.slot(), kTuple));
  const auto latency = std::chrono::steady_clock::now() - start;
  c->batch_running = false;
  beast::error_code ignored;
  c->stream.socket().cancel(ignored);  // ends the disconnect watch

  if (!error) {
    metrics.batch_finished(BatchOutcome::completed, &result.report);
    co_return json_response(http::status::ok, version,
                            estimate_reply(result, config.option, seed, config.strategy, latency,
                                           config.work_price));
  }
  try {
    std::rethrow_exception(error);
  } catch (const boost::system::system_error& e) {
    if (e.code() == asio::error::operation_aborted) {
      metrics.batch_finished(BatchOutcome::cancelled, nullptr);
      if (c->cancel_reason == CancelReason::client_gone) co_return std::nullopt;
      co_return error_response(503, version,
                               "the server is shutting down; the batch was cancelled");
    }
    if (e.code() == asio::error::timed_out) {
      metrics.batch_finished(BatchOutcome::timed_out, nullptr);
      co_return error_response(503, version,
                               "the batch passed its deadline of " +
                                   std::to_string(config.batch_deadline.count()) + " ms");
    }
  } catch (const runtime::ShutdownError&) {
    metrics.batch_finished(BatchOutcome::failed, nullptr);
    co_return error_response(503, version, "the server is shutting down");
  } catch (...) {
  }
  metrics.batch_finished(BatchOutcome::failed, nullptr);
  co_return error_response(500, version, "the batch failed on an internal error");
}

void HttpServer::Impl::on_signal(const beast::error_code& ec) {
  if (ec) return;  // cancelled: the drain is over
  signals.async_wait([this](const beast::error_code& next, int) { on_signal(next); });
  if (stopping.exchange(true)) {
    cancel_batches();  // a second signal: no more grace
    return;
  }
  beast::error_code ignored;
  acceptor.close(ignored);
  for (const auto& c : snapshot()) {
    asio::post(c->stream.get_executor(), [c] {
      if (!c->serving) c->stream.cancel();  // idle: its pending read ends
    });
  }
  grace_timer.expires_after(config.grace);
  grace_timer.async_wait([this](const beast::error_code& expired) {
    if (!expired) cancel_batches();
  });
  finish_if_drained();
}

void HttpServer::Impl::cancel_batches() {
  grace_over = true;
  for (const auto& c : snapshot()) {
    asio::post(c->stream.get_executor(), [c] {
      if (!c->batch_running) return;
      c->cancel_reason = CancelReason::shutdown;
      c->cancel.emit(asio::cancellation_type::terminal);
    });
  }
}

void HttpServer::Impl::forget(const std::shared_ptr<Connection>& c) {
  bool drained = false;
  {
    const std::lock_guard lock(connections_mutex);
    connections.erase(c);
    drained = connections.empty();
  }
  if (drained && stopping) asio::post(control, [this] { finish_if_drained(); });
}

void HttpServer::Impl::finish_if_drained() {
  {
    const std::lock_guard lock(connections_mutex);
    if (!connections.empty()) return;
  }
  // Nothing left to wait for: the io_context runs out of work and run() returns.
  grace_timer.cancel();
  beast::error_code ignored;
  signals.cancel(ignored);
}

std::vector<std::shared_ptr<Connection>> HttpServer::Impl::snapshot() {
  const std::lock_guard lock(connections_mutex);
  return {connections.begin(), connections.end()};
}

HttpServer::HttpServer(const ServerConfig& config, runtime::BatchScheduler& scheduler,
                       ServiceMetrics& metrics) {
  if (config.threads < 1) throw InvalidArgument("--threads must be >= 1, got 0");
  if (config.max_connections < 1) throw InvalidArgument("--max-connections must be >= 1, got 0");
  beast::error_code ec;
  const auto address = asio::ip::make_address(config.listen, ec);
  if (ec) throw InvalidArgument("--listen '" + config.listen + "' is not an IP address");
  impl_ = std::make_unique<Impl>(config, scheduler, metrics);
  impl_->open(address);
}

HttpServer::~HttpServer() = default;

std::uint16_t HttpServer::port() const noexcept {
  beast::error_code ignored;
  return impl_->acceptor.local_endpoint(ignored).port();
}

std::string HttpServer::endpoint() const {
  const auto local = impl_->acceptor.local_endpoint();
  const std::string address = local.address().to_string();
  return (local.address().is_v6() ? "[" + address + "]" : address) + ":" +
         std::to_string(local.port());
}

void HttpServer::run() {
  Impl& s = *impl_;
  asio::co_spawn(s.control, s.accept_loop(), log_stray_exception);
  s.signals.async_wait([&s](const beast::error_code& ec, int) { s.on_signal(ec); });
  std::mutex failure_mutex;
  std::exception_ptr failure;
  const auto work = [&] {
    try {
      s.io.run();
    } catch (...) {
      const std::lock_guard lock(failure_mutex);
      if (!failure) failure = std::current_exception();
      s.io.stop();
    }
  };
  std::vector<std::thread> threads;
  for (std::size_t t = 1; t < s.config.threads; ++t) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace ata::service

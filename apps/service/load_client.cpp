#include "load_client.hpp"

#include <utility>  // before Asio: g++ 12's libstdc++ needs it for Asio's headers

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <deque>
#include <exception>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "ata/core/error.hpp"
#include "ata/models/random.hpp"

namespace ata::service {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);

void rethrow_if_failed(std::exception_ptr error) {
  if (error) std::rethrow_exception(error);
}

tcp::endpoint loopback_endpoint(const std::string& host, std::uint16_t port) {
  return {asio::ip::make_address(loopback_address(host)), port};
}

std::string describe(const std::string& host, std::uint16_t port) {
  return host + ":" + std::to_string(port);
}

// An open-loop run: one coroutine schedules the arrivals, one per request sends it.
class OpenLoop {
 public:
  OpenLoop(const OpenLoopPlan& plan, const std::function<void(std::size_t, std::size_t)>& progress)
      : plan_(plan),
        progress_(progress),
        endpoint_(loopback_endpoint(plan.host, plan.port)),
        host_header_(describe(plan.host, plan.port)),
        outcomes_(plan.arrivals.size()) {
    models::Rng rng(plan.seed, 1);
    const std::size_t choices = plan.samples_max - plan.samples_min + 1;
    for (auto& outcome : outcomes_) outcome.samples = plan.samples_min + rng() % choices;
  }

  OpenLoopResult run() {
    start_ = Clock::now();
    asio::co_spawn(io_, schedule(), rethrow_if_failed);
    io_.run();
    OpenLoopResult result;
    for (const auto& o : outcomes_) result.elapsed = std::max(result.elapsed, o.finished);
    result.requests = std::move(outcomes_);
    return result;
  }

 private:
  using Stream = beast::tcp_stream;

  // A request waiting for a connection; release() hands one over and wakes it.
  struct Waiter {
    explicit Waiter(asio::io_context& io) : wake(io, Clock::time_point::max()) {}
    asio::steady_timer wake;
    std::unique_ptr<Stream> stream;  // null: open a new connection in the slot handed over
    bool woken = false;
  };

  double since_start(Clock::time_point t) const {
    return std::chrono::duration<double>(t - start_).count();
  }

  Clock::time_point at(double seconds) const {
    return start_ +
           std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  }

  asio::awaitable<void> schedule() {
    asio::steady_timer timer(io_);
    for (std::size_t k = 0; k < plan_.arrivals.size(); ++k) {
      timer.expires_at(at(plan_.arrivals[k]));
      co_await timer.async_wait(kTuple);
      asio::co_spawn(io_, send(k), rethrow_if_failed);
    }
  }

  // A connection of the pool, or null with a slot reserved for a new one.
  asio::awaitable<std::unique_ptr<Stream>> acquire() {
    if (!idle_.empty()) {
      auto stream = std::move(idle_.back());
      idle_.pop_back();
      co_return stream;
    }
    if (open_ < plan_.connections) {
      ++open_;
      co_return nullptr;
    }
    Waiter waiter(io_);
    waiters_.push_back(&waiter);
    while (!waiter.woken) co_await waiter.wake.async_wait(kTuple);
    co_return std::move(waiter.stream);
  }

  // Returns a connection (null: it broke, and its slot is free) to the pool.
  void release(std::unique_ptr<Stream> stream) {
    if (!waiters_.empty()) {
      Waiter* next = waiters_.front();
      waiters_.pop_front();
      next->stream = std::move(stream);
      next->woken = true;
      next->wake.cancel();
      return;
    }
    if (stream) {
      idle_.push_back(std::move(stream));
    } else {
      --open_;
    }
  }

  void finish(std::size_t k, Clock::time_point when) {
    auto& o = outcomes_[k];
    o.finished = since_start(when);
    o.latency = o.finished - o.scheduled;
    ++finished_;
    if (progress_) progress_(finished_, outcomes_.size());
  }

  static std::string transport_error(const beast::error_code& ec) {
    return ec == beast::error::timeout ? "timeout" : "connection";
  }

  asio::awaitable<void> send(std::size_t k) {
    auto& o = outcomes_[k];
    o.scheduled = plan_.arrivals[k];
    const auto deadline = at(o.scheduled) + plan_.timeout;
    auto stream = co_await acquire();
    if (Clock::now() >= deadline) {
      o.error = "timeout";
      release(std::move(stream));
      finish(k, Clock::now());
      co_return;
    }
    if (!stream) {
      stream = std::make_unique<Stream>(io_);
      stream->expires_at(deadline);
      auto [connect_error] = co_await stream->async_connect(endpoint_, kTuple);
      if (connect_error) {
        o.error = transport_error(connect_error);
        release(nullptr);
        finish(k, Clock::now());
        co_return;
      }
    }
    const nlohmann::json body{{"samples", o.samples}, {"seed", models::Rng(plan_.seed, 2 + k)()}};
    http::request<http::string_body> request{http::verb::post, "/estimate", 11};
    request.set(http::field::host, host_header_);
    request.set(http::field::content_type, "application/json");
    request.keep_alive(true);
    request.body() = body.dump();
    request.prepare_payload();
    stream->expires_at(deadline);
    auto [write_error, written] = co_await http::async_write(*stream, request, kTuple);
    beast::flat_buffer buffer;
    http::response<http::string_body> response;
    beast::error_code read_error;
    if (!write_error) {
      std::tie(read_error, std::ignore) =
          co_await http::async_read(*stream, buffer, response, kTuple);
    }
    const auto done = Clock::now();
    if (write_error || read_error) {
      o.error = transport_error(write_error ? write_error : read_error);
      release(nullptr);
      finish(k, done);
      co_return;
    }
    o.status = response.result_int();
    if (o.status == 200) {
      const auto reply = nlohmann::json::parse(response.body(), nullptr, false);
      if (reply.is_object() && reply.contains("batch") && reply.contains("latency_seconds")) {
        o.worker_seconds = reply["batch"].value("worker_seconds", 0.0);
        o.batch_seconds = reply.value("latency_seconds", 0.0);
      } else {
        o.error = "malformed reply";
      }
    } else {
      o.error = "HTTP " + std::to_string(o.status);
    }
    release(response.keep_alive() ? std::move(stream) : nullptr);
    finish(k, done);
  }

  const OpenLoopPlan& plan_;
  const std::function<void(std::size_t, std::size_t)>& progress_;
  asio::io_context io_{1};
  tcp::endpoint endpoint_;
  std::string host_header_;
  Clock::time_point start_;
  std::vector<RequestOutcome> outcomes_;
  std::vector<std::unique_ptr<Stream>> idle_;
  std::size_t open_ = 0;  // connections open or being opened
  std::deque<Waiter*> waiters_;
  std::size_t finished_ = 0;
};

}  // namespace

std::string loopback_address(const std::string& host) {
  if (host == "localhost") return "127.0.0.1";
  beast::error_code ec;
  const auto address = asio::ip::make_address(host, ec);
  if (ec || !address.is_loopback()) {
    throw InvalidArgument(
        "--host must be a loopback address (127.0.0.1, ::1 or localhost): "
        "ata-load sends load over loopback only, got '" +
        host + "'");
  }
  return address.to_string();
}

HttpReply http_exchange(const std::string& host, std::uint16_t port, std::string_view method,
                        std::string_view target, std::string body,
                        std::chrono::milliseconds timeout) {
  const auto endpoint = loopback_endpoint(host, port);
  asio::io_context io{1};
  beast::tcp_stream stream(io);
  http::request<http::string_body> request{http::string_to_verb(method), target, 11};
  request.set(http::field::host, describe(host, port));
  if (!body.empty()) request.set(http::field::content_type, "application/json");
  request.keep_alive(false);
  request.body() = std::move(body);
  request.prepare_payload();
  HttpReply reply;
  beast::error_code failure;
  const std::string what = std::string(method) + " " + std::string(target);
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        stream.expires_after(timeout);
        auto [connect_error] = co_await stream.async_connect(endpoint, kTuple);
        if (connect_error) {
          failure = connect_error;
          co_return;
        }
        auto [write_error, written] = co_await http::async_write(stream, request, kTuple);
        if (write_error) {
          failure = write_error;
          co_return;
        }
        beast::flat_buffer buffer;
        http::response<http::string_body> response;
        auto [read_error, read] = co_await http::async_read(stream, buffer, response, kTuple);
        if (read_error) {
          failure = read_error;
          co_return;
        }
        reply.status = response.result_int();
        reply.body = std::move(response.body());
      },
      rethrow_if_failed);
  io.run();
  if (failure) {
    throw Error(what + " to " + describe(host, port) + " failed: " +
                (failure == beast::error::timeout
                     ? "no reply within " + std::to_string(timeout.count()) + " ms"
                     : failure.message()));
  }
  return reply;
}

OpenLoopResult run_open_loop(const OpenLoopPlan& plan,
                             const std::function<void(std::size_t, std::size_t)>& progress) {
  if (plan.connections < 1) throw InvalidArgument("--connections must be >= 1, got 0");
  if (plan.samples_min < 1 || plan.samples_min > plan.samples_max) {
    throw InvalidArgument("samples per request must satisfy 1 <= min <= max, got " +
                          std::to_string(plan.samples_min) + " and " +
                          std::to_string(plan.samples_max));
  }
  OpenLoop run(plan, progress);
  return run.run();
}

}  // namespace ata::service

#pragma once
// An ata-serve child process, as ata-load --sweep and the tests run it: started with an
// argument vector (posix_spawn, never a shell), its port read from the first line it prints.

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace ata::service {

/// A running server.
///
/// @code
/// ata::service::ServerProcess server("build/apps/ata-serve", {"--port", "0"});
/// // ... requests to 127.0.0.1:server.port() ...
/// int code = server.stop(std::chrono::seconds(10));  // SIGTERM, then wait
/// @endcode
///
/// Its stdout is a pipe read by the object (a thread drains it after the first line); its
/// stderr is the caller's. The destructor kills (SIGKILL) and reaps a child still running.
/// Not thread-safe.
class ServerProcess {
 public:
  /// Starts `program` with `arguments` and waits up to `startup` for its first line,
  /// "<name>: listening on ADDRESS:PORT". Throws ata::Error naming the program when it cannot
  /// start, exits first, stays silent, or prints something else (the child is then killed).
  ServerProcess(const std::string& program, const std::vector<std::string>& arguments,
                std::chrono::milliseconds startup = std::chrono::seconds(10));
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
  [[nodiscard]] const std::string& first_line() const noexcept { return first_line_; }
  [[nodiscard]] pid_t pid() const noexcept { return pid_; }

  /// Sends `signal` to the child, unless it has been reaped.
  void send_signal(int signal);
  /// Waits up to `timeout` for the child to exit; returns its exit code (128 + the signal if
  /// a signal ended it), or nothing if it is still running.
  std::optional<int> wait(std::chrono::milliseconds timeout);
  /// SIGTERM, then wait() up to `timeout`; past it, SIGKILL. Returns the exit code.
  int stop(std::chrono::milliseconds timeout);
  /// What the child printed on stdout after its first line; complete once it has exited.
  [[nodiscard]] std::string output();

 private:
  void kill_and_reap() noexcept;

  std::string program_;
  pid_t pid_ = -1;
  std::optional<int> exit_code_;
  std::uint16_t port_ = 0;
  std::string first_line_;
  std::mutex output_mutex_;
  std::string output_;
  std::thread drain_;  // reads stdout to its end, so the child never blocks on a full pipe
};

/// The port in a line "<name>: listening on ADDRESS:PORT", or nothing.
[[nodiscard]] std::optional<std::uint16_t> port_from_banner(const std::string& line);

}  // namespace ata::service

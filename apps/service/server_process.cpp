#include "server_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include "ata/core/error.hpp"

extern char** environ;

namespace ata::service {

namespace {

using Clock = std::chrono::steady_clock;

// How often wait() looks at the child.
constexpr auto kPollInterval = std::chrono::milliseconds(5);
constexpr std::size_t kLongestBanner = 4096;

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

std::optional<std::uint16_t> port_from_banner(const std::string& line) {
  const std::string marker = ": listening on ";
  if (line.find(marker) == std::string::npos) return std::nullopt;
  const auto colon = line.rfind(':');
  const std::string digits = line.substr(colon + 1);
  if (digits.empty() || digits.size() > 5 ||
      digits.find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  const unsigned long port = std::stoul(digits);
  if (port == 0 || port > 65535) return std::nullopt;
  return static_cast<std::uint16_t>(port);
}

ServerProcess::ServerProcess(const std::string& program, const std::vector<std::string>& arguments,
                             std::chrono::milliseconds startup)
    : program_(program) {
  int pipe_ends[2];
  if (pipe2(pipe_ends, O_CLOEXEC) != 0) {
    throw Error("cannot start '" + program + "': no pipe (" + std::strerror(errno) + ")");
  }
  std::vector<std::string> words{program};
  words.insert(words.end(), arguments.begin(), arguments.end());
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_ends[1], STDOUT_FILENO);
  const int spawned = posix_spawn(&pid_, program.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(pipe_ends[1]);
  if (spawned != 0) {
    close(pipe_ends[0]);
    pid_ = -1;
    throw Error("cannot start '" + program + "': " + std::strerror(spawned));
  }
  const int out = pipe_ends[0];

  // The first line, within the startup time.
  std::string seen;
  const auto give_up = Clock::now() + startup;
  std::string failure;
  while (seen.find('\n') == std::string::npos) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(give_up - Clock::now());
    if (left.count() <= 0) {
      failure = "printed no port within " + std::to_string(startup.count()) + " ms";
      break;
    }
    pollfd ready{out, POLLIN, 0};
    if (poll(&ready, 1, static_cast<int>(left.count())) < 0 && errno != EINTR) {
      failure = std::string("cannot read its output: ") + std::strerror(errno);
      break;
    }
    char chunk[512];
    const ssize_t got = (ready.revents & (POLLIN | POLLHUP)) ? read(out, chunk, sizeof chunk) : 0;
    if ((ready.revents & (POLLIN | POLLHUP)) && got <= 0) {
      failure = "exited before printing its port";
      break;
    }
    if (got > 0) seen.append(chunk, static_cast<std::size_t>(got));
    if (seen.size() > kLongestBanner) {
      failure = "printed a first line longer than " + std::to_string(kLongestBanner) + " bytes";
      break;
    }
  }
  const auto end_of_line = seen.find('\n');
  if (failure.empty()) {
    first_line_ = seen.substr(0, end_of_line);
    const auto port = port_from_banner(first_line_);
    if (port) {
      port_ = *port;
    } else {
      failure = "printed '" + first_line_ + "' instead of 'listening on ADDRESS:PORT'";
    }
  }
  if (!failure.empty()) {
    close(out);
    kill_and_reap();
    throw Error("'" + program + "' " + failure);
  }
  output_ = seen.substr(end_of_line + 1);
  drain_ = std::thread([this, out] {
    char chunk[4096];
    for (;;) {
      const ssize_t got = read(out, chunk, sizeof chunk);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) break;
      const std::lock_guard lock(output_mutex_);
      output_.append(chunk, static_cast<std::size_t>(got));
    }
    close(out);
  });
}

ServerProcess::~ServerProcess() {
  kill_and_reap();
  if (drain_.joinable()) drain_.join();
}

void ServerProcess::send_signal(int signal) {
  if (pid_ > 0 && !exit_code_) ::kill(pid_, signal);
}

std::optional<int> ServerProcess::wait(std::chrono::milliseconds timeout) {
  if (exit_code_ || pid_ <= 0) return exit_code_;
  const auto give_up = Clock::now() + timeout;
  for (;;) {
    int status = 0;
    const pid_t done = waitpid(pid_, &status, WNOHANG);
    if (done == pid_) {
      exit_code_ = exit_code_of(status);
      if (drain_.joinable()) drain_.join();  // the pipe closes when the child exits
      return exit_code_;
    }
    if (done < 0 && errno != EINTR) {
      exit_code_ = -1;  // not our child any more: nothing left to wait for
      return exit_code_;
    }
    if (Clock::now() >= give_up) return std::nullopt;
    std::this_thread::sleep_for(kPollInterval);
  }
}

int ServerProcess::stop(std::chrono::milliseconds timeout) {
  send_signal(SIGTERM);
  if (const auto code = wait(timeout)) return *code;
  kill_and_reap();
  return exit_code_.value_or(-1);
}

std::string ServerProcess::output() {
  const std::lock_guard lock(output_mutex_);
  return output_;
}

void ServerProcess::kill_and_reap() noexcept {
  if (pid_ <= 0 || exit_code_) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  exit_code_ = exit_code_of(status);
}

}  // namespace ata::service

#pragma once
// Runs test cases of this very test binary in a fresh process, for what happens only in a
// process's first moments (a library's first threads). POSIX only.
#include <signal.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

extern char** environ;

namespace ata::testing {

// Runs the test cases matching `spec` (a Catch2 test spec, such as a tag) in a new process of
// this binary, its output discarded. Returns "" when they passed, else what went wrong; a
// process still running after `patience` is killed.
inline std::string run_child_test(const std::string& spec, std::chrono::seconds patience) {
  posix_spawn_file_actions_t actions;
  if (posix_spawn_file_actions_init(&actions) != 0) return "cannot prepare a child process";
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  std::string program = "/proc/self/exe";
  std::string spec_arg = spec;
  char* argv[] = {program.data(), spec_arg.data(), nullptr};
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, program.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) return "cannot start a child process";
  const auto deadline = std::chrono::steady_clock::now() + patience;
  int status = 0;
  for (;;) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0) return "lost the child process";
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return "the child process hung (killed after " + std::to_string(patience.count()) + " s)";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
  if (WIFEXITED(status)) return "the child's tests failed (exit " +
                                std::to_string(WEXITSTATUS(status)) + ")";
  return "the child process died (signal " + std::to_string(WTERMSIG(status)) + ")";
}

}  // namespace ata::testing

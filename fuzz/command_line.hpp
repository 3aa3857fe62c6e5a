#pragma once
// Shared by the command-line fuzz targets: argv decoded from the input bytes, and the
// parser's contract checked on it (only ata::InvalidArgument escapes, nothing printed, no
// file created or removed in the working folder).

#include <sys/stat.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "ata/core/error.hpp"
#include "ata/core/make_policy.hpp"
#include "fuzz_support.hpp"

namespace ata::fuzz {

// Bounds on a decoded command line: beyond them an input is skipped, as no parser behaviour
// depends on hundreds of arguments or megabyte-long values.
inline constexpr std::size_t kMaxArguments = 64;
inline constexpr std::size_t kMaxArgumentBytes = 1024;

// The arguments after the program name: the input split at NUL bytes ("--batch\0" "5" is
// {"--batch", "5"}; a trailing NUL adds no empty argument, two in a row give one). Nothing
// when the input exceeds the bounds above.
inline std::optional<std::vector<std::string>> decode_arguments(std::string_view bytes) {
  std::vector<std::string> arguments;
  while (!bytes.empty()) {
    const std::size_t end = std::min(bytes.find('\0'), bytes.size());
    if (arguments.size() == kMaxArguments || end > kMaxArgumentBytes) return std::nullopt;
    arguments.emplace_back(bytes.substr(0, end));
    bytes.remove_prefix(std::min(end + 1, bytes.size()));
  }
  return arguments;
}

// The last modification time of the working folder: creating, renaming or removing an entry in
// it changes this, so comparing it before and after a parse is a cheap "touched no file" test.
// scripts/fuzz and the replay tests run the targets in an empty folder of their own.
inline timespec working_folder_time() {
  struct stat status {};
  if (stat(".", &status) != 0) finding("cannot stat the working folder");
  return status.st_mtim;
}

// Runs `parse(argc, argv)` on {program, arguments...} and checks its contract. Returns the
// parsed command line, or nothing when the parser refused it with ata::InvalidArgument (the
// apps' UsageError is one).
template <typename Parse>
auto parse_command_line(const char* program, const std::vector<std::string>& arguments,
                        const Parse& parse) -> std::optional<decltype(parse(0, nullptr))> {
  std::vector<const char*> argv{program};
  for (const std::string& argument : arguments) argv.push_back(argument.c_str());
  argv.push_back(nullptr);  // as the system's argv: argv[argc] is a null pointer
  const int argc = static_cast<int>(argv.size() - 1);

  // Whatever goes to the standard streams lands here instead.
  std::ostringstream printed;
  std::streambuf* const out = std::cout.rdbuf(printed.rdbuf());
  std::streambuf* const err = std::cerr.rdbuf(printed.rdbuf());
  std::streambuf* const log = std::clog.rdbuf(printed.rdbuf());
  const timespec before = working_folder_time();
  std::optional<decltype(parse(0, nullptr))> result;
  std::optional<std::string> escaped;
  try {
    result.emplace(parse(argc, argv.data()));
  } catch (const ata::InvalidArgument&) {
  } catch (const std::exception& e) {
    escaped = "exception not derived from ata::InvalidArgument: " + type_name(e) + ": " + e.what();
  } catch (...) {
    escaped = "exception not derived from std::exception";
  }
  const timespec after = working_folder_time();
  std::cout.rdbuf(out);
  std::cerr.rdbuf(err);
  std::clog.rdbuf(log);

  if (escaped) finding(*escaped);
  if (!printed.str().empty()) finding("the parser printed: " + printed.str().substr(0, 300));
  if (before.tv_sec != after.tv_sec || before.tv_nsec != after.tv_nsec) {
    finding("the parser created or removed a file in the working folder");
  }
  return result;
}

// A parsed number outside what the flag documents is a finding.
inline void check_limit(const char* flag, double value, double lowest, double highest) {
  if (!(value >= lowest && value <= highest)) {
    finding(std::string(flag) + " " + std::to_string(value) + " outside [" +
            std::to_string(lowest) + ", " + std::to_string(highest) + "]");
  }
}

// The parsed strategies: each known (a policy name or one of `extra`), none twice, and every
// yardstick present.
inline void check_strategies(const std::vector<std::string>& strategies,
                             const std::vector<std::string>& extra,
                             const std::vector<std::string>& yardsticks) {
  for (auto it = strategies.begin(); it != strategies.end(); ++it) {
    if (std::find(extra.begin(), extra.end(), *it) == extra.end()) {
      try {
        ata::require_policy_name(*it);  // the names make_policy() knows, race:M included
      } catch (const ata::InvalidArgument&) {
        finding("unknown strategy '" + *it + "' accepted");
      }
    }
    if (std::find(strategies.begin(), it, *it) != it) finding("strategy '" + *it + "' twice");
  }
  for (const auto& yardstick : yardsticks) {
    if (std::find(strategies.begin(), strategies.end(), yardstick) == strategies.end()) {
      finding("yardstick " + yardstick + " missing");
    }
  }
}

}  // namespace ata::fuzz

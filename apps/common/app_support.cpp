#include "app_support.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <new>
#include <sstream>
#include <stdexcept>
#include <system_error>

#include "ata/core/backup_rule.hpp"
#include "ata/core/error.hpp"
#include "ata/core/make_policy.hpp"
#include "core/checks.hpp"
#include "models/text_file.hpp"
#include "plot_script.hpp"  // generated: kPlotScript, the text of plot.py

extern char** environ;

namespace ata::apps {

using ata::detail::excerpt;

std::optional<std::string> parse_arguments(CLI::App& app, int argc, const char* const* argv) {
  if (argc < 1 || argv == nullptr || argv[0] == nullptr) {
    throw UsageError("no program name in the argument list");
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    return app.help();
  } catch (const CLI::ParseError& e) {
    throw UsageError(excerpt(e.what(), 200));
  }
  return std::nullopt;
}

int run_reporting_errors(const char* program, const std::function<int()>& body) {
  const auto report = [&](const std::string& what) {
    std::cerr << program << ": error: " << what << "\n";
  };
  try {
    return body();
  } catch (const UsageError& e) {
    report(std::string(e.what()) + " (see --help)");
    return 2;
  } catch (const std::bad_alloc&) {
    report("out of memory: this run needs more than the machine can give (lower its sizes)");
  } catch (const std::length_error&) {
    report("out of memory: a size in this run is beyond what can be allocated (lower its sizes)");
  } catch (const std::system_error& e) {
    report("the system refused: " + e.code().message());
  } catch (const std::exception& e) {
    report(e.what());
  }
  return 1;
}

void warn(const char* program, const std::string& what) {
  std::cerr << program << ": warning: " << what << "\n";
}

namespace {

std::string bound_text(double value) { return ata::detail::to_text(value); }

}  // namespace

CLI::Validator whole_number(std::uint64_t lowest, std::uint64_t highest) {
  const std::string description =
      highest == std::numeric_limits<std::uint64_t>::max()
          ? "a whole number >= " + std::to_string(lowest)
          : "a whole number from " + std::to_string(lowest) + " to " + std::to_string(highest);
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        std::uint64_t value = 0;
        const bool digits =
            !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (!digits || error != std::errc() || end != text.data() + text.size() || value < lowest ||
            value > highest) {
          return "must be " + description + ", got '" + excerpt(text) + "'";
        }
        text = std::to_string(value);  // CLI11 would read "010" as octal: hand it the decimal
        return {};
      },
      description);
}

CLI::Validator number_in(double lowest, bool lowest_included, double highest,
                         bool highest_included) {
  const std::string description =
      std::isinf(highest)
          ? std::string("a number ") + (lowest_included ? ">= " : "> ") + bound_text(lowest)
          : std::string("a number in ") + (lowest_included ? "[" : "(") + bound_text(lowest) +
                ", " + bound_text(highest) + (highest_included ? "]" : ")");
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        double value = 0.0;
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
        const bool ok = !text.empty() && error == std::errc() && end == text.data() + text.size() &&
                        std::isfinite(value) &&
                        (lowest_included ? value >= lowest : value > lowest) &&
                        (highest_included ? value <= highest : value < highest);
        return ok ? std::string() : "must be " + description + ", got '" + excerpt(text) + "'";
      },
      description);
}

const CLI::Validator kPositiveNumber = number_in(0.0, false);
const CLI::Validator kNonNegativeNumber = number_in(0.0, true);

const CLI::Validator kNonEmpty(
    [](std::string& text) -> std::string { return text.empty() ? "must not be empty" : ""; },
    "NON-EMPTY");

const CLI::Validator kBackupMode(
    [](std::string& text) -> std::string {
      try {
        (void)ata::parse_backup_mode(text);
      } catch (const ata::InvalidArgument& e) {
        return e.what();
      }
      return {};
    },
    "off|copies|on");

const CLI::Validator kAtaAutoRace = CLI::IsMember({"fungible", "indexed", "off"});

const char* const kAtaAutoRaceHelp =
    "the race ata-auto may choose when it learns the plan of least objective: fungible (tasks "
    "are samples, as race:M and GTA take them), indexed (every task index runs once), off "
    "(quotas only)";

std::optional<RaceKind> ata_auto_race(std::string_view name) {
  if (name == "fungible") return RaceKind::fungible;
  if (name == "indexed") return RaceKind::indexed;
  return std::nullopt;
}

std::string played_shares(std::span<const sim::PlayedPlan> played, std::size_t rounds) {
  std::string text;
  for (const auto& p : played) {
    text += (text.empty() ? "" : ", ") + p.plan + " " +
            general(100.0 * static_cast<double>(p.rounds) / static_cast<double>(rounds), 3) + "%";
  }
  return text;
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  std::size_t start = 0;
  for (;;) {
    const auto comma = text.find(',', start);
    items.push_back(
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) return items;
    start = comma + 1;
  }
}

CLI::Validator strategy_list(std::vector<std::string> extra) {
  return CLI::Validator(
      [extra](std::string& text) -> std::string {
        std::vector<std::string> names(policy_names().begin(), policy_names().end());
        names.insert(names.end(), extra.begin(), extra.end());
        std::string known;
        for (const auto& name : names) known += (known.empty() ? "" : ", ") + name;
        for (const auto& item : split_list(text)) {
          if (std::find(names.begin(), names.end(), item) != names.end()) continue;
          if (item.empty()) {
            return "empty item in '" + excerpt(text) +
                   "' (two commas in a row, or one at an end?); expected a comma list of " + known +
                   ", race:M, race:M@F";
          }
          try {
            require_policy_name(item);
          } catch (const InvalidArgument& e) {
            if (std::string_view(e.what()).starts_with("unknown strategy")) {
              return "unknown strategy '" + excerpt(item) + "'; expected one of: " + known +
                     ", race:M, race:M@F";
            }
            return e.what();
          }
        }
        return {};
      },
      "LIST");
}

std::vector<std::string> strategies_with_yardsticks(const std::string& list,
                                                    const std::vector<std::string>& yardsticks) {
  std::vector<std::string> names;
  for (auto& s : split_list(list)) {
    if (std::find(names.begin(), names.end(), s) == names.end()) names.push_back(s);
  }
  for (const auto& yardstick : yardsticks) {
    if (std::find(names.begin(), names.end(), yardstick) == names.end()) {
      names.emplace_back(yardstick);
    }
  }
  return names;
}

models::Scenario scenario_from_flag(const std::string& scenario, std::size_t workers,
                                    std::size_t default_workers, std::size_t change_round) {
  for (const auto name : models::preset_names()) {
    if (scenario == name) {
      return models::make_preset(name, workers ? workers : default_workers, change_round);
    }
  }
  if (std::error_code ignored; scenario.find_first_of("/.") == std::string::npos &&
                               !std::filesystem::exists(scenario, ignored)) {
    return models::make_preset(scenario, 1);  // throws: unknown scenario, listing the presets
  }
  auto loaded = models::load_scenario(scenario);
  if (workers != 0 && workers != loaded.workers()) {
    throw InvalidArgument("--workers " + std::to_string(workers) + " disagrees with the " +
                          std::to_string(loaded.workers()) + " workers of " + scenario);
  }
  return loaded;
}

std::optional<std::size_t> checked_product(std::initializer_list<std::size_t> factors) {
  std::size_t product = 1;
  for (const std::size_t f : factors) {
    if (f != 0 && product > std::numeric_limits<std::size_t>::max() / f) return std::nullopt;
    product *= f;
  }
  return product;
}

void require_memory(const std::string& what, std::initializer_list<std::size_t> factors,
                    const std::string& advice) {
  const auto bytes = checked_product(factors);
  if (bytes && *bytes <= kMaxMemoryBytes) return;
  double estimate = 1.0;
  for (const std::size_t f : factors) estimate *= static_cast<double>(f);
  throw InvalidArgument(what + " need " + ata::detail::byte_size(estimate) +
                        ", more than the limit of " +
                        ata::detail::byte_size(static_cast<double>(kMaxMemoryBytes)) + advice);
}

std::string Table::render() const {
  std::vector<std::size_t> width(header_.size(), 0);
  const auto measure = [&](const std::vector<std::string>& row) {
    for (std::size_t c = 0; c < row.size() && c < width.size(); ++c)
      width[c] = std::max(width[c], row[c].size());
  };
  measure(header_);
  for (const auto& row : rows_) measure(row);
  std::ostringstream out;
  const auto line = [&](const std::vector<std::string>& row) {
    for (std::size_t c = 0; c < width.size(); ++c) {
      const std::string cell = c < row.size() ? row[c] : "";
      const std::string pad(width[c] - cell.size(), ' ');
      out << (c == 0 ? cell + pad : "  " + pad + cell);  // first column left, others right
    }
    out << '\n';
  };
  line(header_);
  std::size_t total = 0;
  for (const auto w : width) total += w + 2;
  out << std::string(total - 2, '-') << '\n';
  for (const auto& row : rows_) line(row);
  return out.str();
}

std::string fixed(double value, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

std::string general(double value, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*g", digits, value);
  return buffer;
}

namespace {

namespace fs = std::filesystem;

[[noreturn]] void output_error(std::string_view flag, const fs::path& path,
                               const std::string& reason) {
  throw InvalidArgument(std::string(flag) + " '" + path.string() + "': " + reason);
}

// The nearest folder on the way up from `folder` that exists: where a new file or folder would
// first be created. Fails if something on the way exists but is not a folder.
fs::path nearest_existing_folder(std::string_view flag, const fs::path& target, fs::path folder) {
  if (folder.empty()) folder = ".";
  for (;;) {
    std::error_code error;
    const auto status = fs::status(folder, error);
    if (fs::exists(status)) {
      if (!fs::is_directory(status)) {
        output_error(flag, target, "'" + folder.string() + "' is not a folder");
      }
      return folder;
    }
    if (error && error != std::errc::no_such_file_or_directory) {
      output_error(flag, target, error.message());
    }
    const fs::path parent = folder.parent_path();
    if (parent.empty() || parent == folder) return ".";
    folder = parent;
  }
}

// Creates and removes a file in `folder`: the one test of writability that holds for every
// user (root too) and every file system (read-only ones too).
void probe_folder(std::string_view flag, const fs::path& target, const fs::path& folder) {
  std::string name = (folder / ".ata-probe-XXXXXX").string();
  const int fd = ::mkstemp(name.data());
  if (fd < 0) {
    output_error(flag, target,
                 "cannot create a file in '" + folder.string() + "': " + std::strerror(errno));
  }
  ::close(fd);
  ::unlink(name.c_str());
}

}  // namespace

void check_output_file(std::string_view flag, const fs::path& path) {
  std::error_code error;
  if (fs::is_directory(path, error)) output_error(flag, path, "is a folder, not a file");
  if (!path.has_filename()) output_error(flag, path, "names a folder, not a file");
  probe_folder(flag, path, nearest_existing_folder(flag, path, path.parent_path()));
}

void check_output_folder(std::string_view flag, const fs::path& path) {
  probe_folder(flag, path, nearest_existing_folder(flag, path, path));
}

void write_file(const fs::path& path, const std::string& text) {
  const auto fail = [&](const std::string& reason) -> void {
    throw Error("cannot write '" + path.string() + "': " + reason);
  };
  const fs::path folder = path.has_parent_path() ? path.parent_path() : fs::path(".");
  std::error_code error;
  fs::create_directories(folder, error);
  if (error) fail("cannot create folder '" + folder.string() + "': " + error.message());
  // A name of our own next to the target, so the rename stays within one file system; created
  // with O_EXCL and the umask's permissions, like the file it replaces.
  static std::atomic<unsigned> counter{0};
  const fs::path temporary =
      folder / ("." + path.filename().string() + ".tmp-" + std::to_string(::getpid()) + "-" +
                std::to_string(counter++));
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) fail(std::strerror(errno));
  const auto abandon = [&](int saved_errno) {
    ::close(fd);
    ::unlink(temporary.c_str());
    fail(std::strerror(saved_errno));
  };
  std::size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) abandon(errno);
    written += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) abandon(errno);
  if (::close(fd) != 0) {
    const int saved = errno;
    ::unlink(temporary.c_str());
    fail(std::strerror(saved));
  }
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    const int saved = errno;
    ::unlink(temporary.c_str());
    fail(std::strerror(saved));
  }
}

std::vector<fs::path> plot_figures(const fs::path& folder, const std::vector<Figure>& figures) {
  nlohmann::json spec;
  std::vector<fs::path> files;
  for (const auto& f : figures) {
    nlohmann::json series = nlohmann::json::array();
    for (const auto& s : f.series) {
      series.push_back({{"label", s.label}, {"x", s.x}, {"y", s.y}});
      if (s.reference) series.back()["reference"] = true;
    }
    files.push_back(folder / f.file);
    nlohmann::json bars = nlohmann::json::array();
    for (const auto& b : f.bars) bars.push_back({b.row, b.start, b.length, b.group});
    spec["figures"].push_back({{"file", files.back().string()},
                               {"bars", bars},
                               {"title", f.title},
                               {"xlabel", f.xlabel},
                               {"ylabel", f.ylabel},
                               {"xlog", f.xlog},
                               {"ylog", f.ylog},
                               {"series", series}});
  }
  const auto data = folder / "plot-data.json";
  write_file(data, spec.dump());
  // Debian's interpreter first: it is the one python3-matplotlib installs into, whatever else
  // (a pyenv or venv) is on PATH. ATA_PYTHON overrides both.
  const char* chosen = std::getenv("ATA_PYTHON");
  const std::string python = chosen && *chosen                ? chosen
                             : fs::exists("/usr/bin/python3") ? "/usr/bin/python3"
                                                              : "python3";
  // An argument vector, no shell: the script travels as the argument of -c and the data file's
  // path as sys.argv[1], whatever characters the folder's name holds.
  const std::string script(kPlotScript);
  const std::string data_path = data.string();
  std::vector<char*> argv{const_cast<char*>(python.c_str()), const_cast<char*>("-c"),
                          const_cast<char*>(script.c_str()), const_cast<char*>(data_path.c_str()),
                          nullptr};
  const std::string needed =
      "; " + python +
      " with matplotlib is needed (scripts/setup installs python3-matplotlib); the data is in '" +
      data_path + "'";
  // The plotter's stderr comes back through a pipe: its last line goes into our one-line
  // error, and matplotlib's chatter does not reach the user.
  int pipe_ends[2];
  if (::pipe2(pipe_ends, O_CLOEXEC) != 0) {
    throw Error("plotting failed: " + std::string(std::strerror(errno)));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_ends[1], STDERR_FILENO);
  std::fflush(stdout);
  pid_t child = 0;
  const int spawn_error =
      ::posix_spawnp(&child, python.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_ends[1]);
  if (spawn_error != 0) {
    ::close(pipe_ends[0]);
    throw Error("plotting failed: cannot run " + python + ": " + std::strerror(spawn_error) +
                needed);
  }
  std::string messages;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(pipe_ends[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    messages.append(buffer, static_cast<std::size_t>(n));
    if (messages.size() > 8192) {
      messages.erase(0, messages.size() - 8192);  // the end is what matters
    }
    ::close(pipe_ends[0]);
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) {
      throw Error("plotting failed: " + std::string(std::strerror(errno)) + needed);
    }
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string how = WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status))
                                        : "signal " + std::to_string(WTERMSIG(status));
    while (!messages.empty() && (messages.back() == '\n' || messages.back() == ' ')) {
      messages.pop_back();
    }
    if (const auto last = messages.rfind('\n'); !messages.empty()) {
      how += ": " + excerpt(last == std::string::npos ? messages : messages.substr(last + 1), 120);
    }
    throw Error("plotting failed (" + how + ")" + needed);
  }
  return files;
}

Progress::Progress(std::string label)
    : label_(std::move(label)), enabled_(isatty(STDERR_FILENO) == 1) {}

Progress::~Progress() {
  if (enabled_ && last_percent_ >= 0) std::fprintf(stderr, "\r\033[K");
}

void Progress::update(double fraction, const std::string& detail) {
  if (!enabled_) return;
  const std::lock_guard lock(mutex_);
  const int percent = static_cast<int>(fraction * 100.0);
  if (percent <= last_percent_) return;  // concurrent callers may report slightly out of order
  last_percent_ = percent;
  const int filled = percent / 5;
  std::fprintf(stderr, "\r\033[K%s [%s%s] %3d%% %s", label_.c_str(),
               std::string(static_cast<std::size_t>(filled), '#').c_str(),
               std::string(static_cast<std::size_t>(20 - filled), '.').c_str(), percent,
               detail.c_str());
  std::fflush(stderr);
}

namespace {

// The highest CPU number Linux's affinity masks hold (CPU_SETSIZE - 1).
constexpr std::uint64_t kHighestCpu = 1023;

// "0-3,6": the CPUs this process may use, as ranges.
std::string usable_cpus_text(const std::vector<unsigned>& cpus) {
  std::string out;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    out += (out.empty() ? "" : ",") + std::to_string(cpus[i]);
    if (j > i) out += "-" + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

std::vector<unsigned> usable_cpus() {
  std::vector<unsigned> out;
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) == 0) {
    for (unsigned c = 0; c <= kHighestCpu && c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &allowed)) out.push_back(c);
    }
  }
  return out;
}

}  // namespace

CLI::Validator number_list(const CLI::Validator& item, std::size_t most,
                           std::function<std::string(std::uint64_t)> also) {
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        const auto items = split_list(text);
        if (items.size() > most) {
          return "more than " + std::to_string(most) + " values (one per worker)";
        }
        std::string canonical;
        for (std::size_t k = 0; k < items.size(); ++k) {
          std::string value = items[k];
          if (value.empty()) return "empty item in '" + ata::detail::excerpt(text) + "'";
          if (auto error = item(value); !error.empty()) {
            return "item " + std::to_string(k + 1) + " " + error;
          }
          if (also) {
            std::uint64_t number = 0;
            std::from_chars(value.data(), value.data() + value.size(), number);
            if (auto error = also(number); !error.empty()) return error;
          }
          canonical += (canonical.empty() ? "" : ",") + value;
        }
        text = canonical;
        return {};
      },
      "LIST");
}

std::vector<std::uint64_t> numbers_of(const std::string& list) {
  std::vector<std::uint64_t> out;
  if (list.empty()) return out;
  for (const auto& item : split_list(list)) {
    std::uint64_t value = 0;
    std::from_chars(item.data(), item.data() + item.size(), value);  // checked by number_list
    out.push_back(value);
  }
  return out;
}

CLI::Validator cpu_list(std::size_t most) {
  const auto usable = usable_cpus();
  return number_list(whole_number(0, kHighestCpu), most, [usable](std::uint64_t cpu) {
    if (std::find(usable.begin(), usable.end(), cpu) != usable.end()) return std::string();
    return "CPU " + std::to_string(cpu) + " is not one this process may use (" +
           (usable.empty() ? std::string("none") : usable_cpus_text(usable)) + ")";
  });
}

}  // namespace ata::apps

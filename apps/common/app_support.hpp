#pragma once
// What the demo apps share: text tables, output files, the PNG plotter and a progress line.

#include <CLI/CLI.hpp>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <optional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ata/sim/scenario.hpp"

namespace ata::apps {

/// CLI11 validators with messages that say what was expected ("must be a whole number >= 1").
extern const CLI::Validator kWholeAtLeastOne;
extern const CLI::Validator kWholeNonNegative;
extern const CLI::Validator kPositiveNumber;
extern const CLI::Validator kNonNegativeNumber;

/// Parses the command line. Returns std::nullopt to go on, or the exit code: 0 after printing
/// --help, 2 after printing one line "<program>: error: <what> (see --help)" for a bad flag.
std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv, const char* program);

/// Runs `body` and returns its exit code; an exception becomes one line on stderr,
/// "<program>: error: <what>", and exit code 1.
int run_reporting_errors(const char* program, const std::function<int()>& body);

/// The cluster a --scenario flag names: a preset of `workers` workers (a preset's change, if
/// any, at round `change_round`) or a JSON scenario file. Throws ata::InvalidArgument for
/// anything else, listing the presets.
sim::Scenario scenario_from_flag(const std::string& scenario, std::size_t workers,
                                 std::size_t change_round);

/// A plain text table with right-aligned numeric columns.
class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void add_row(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  [[nodiscard]] std::string render() const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

/// printf-style "%.*g" / "%.*f" formatting for table cells.
std::string fixed(double value, int decimals);
std::string general(double value, int digits = 4);

/// Writes `text` to `path`, creating parent folders; throws ata::Error if it cannot.
void write_file(const std::filesystem::path& path, const std::string& text);

/// A figure for plot_figures(): one line per series.
struct Series {
  std::string label;
  std::vector<double> x;
  std::vector<double> y;
};
struct Figure {
  std::string file;  // name inside the plot folder
  std::string title;
  std::string xlabel;
  std::string ylabel;
  bool xlog = false;
  bool ylog = false;
  std::vector<Series> series;
};

/// Writes every figure as a PNG into `folder` with matplotlib (python3), and returns the paths.
/// The figure data is kept next to them as plot-data.json. Throws ata::Error when python3 or
/// matplotlib is missing or the plotter fails.
std::vector<std::filesystem::path> plot_figures(const std::filesystem::path& folder,
                                                const std::vector<Figure>& figures);

/// "ata-sim: 42% (ata 3/5)" on stderr, redrawn in place, only when stderr is a terminal.
/// update() is thread-safe.
class Progress {
 public:
  explicit Progress(std::string label);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  void update(double fraction, const std::string& detail);

 private:
  std::string label_;
  bool enabled_;
  int last_percent_ = -1;
  std::mutex mutex_;
};

}  // namespace ata::apps

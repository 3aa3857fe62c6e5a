#pragma once
// What the demo apps share: command-line parsing and validators, error reporting, limits on
// what a run may allocate, text tables, output files, the PNG plotter and a progress line.

#include <CLI/CLI.hpp>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <limits>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ata/core/error.hpp"
#include "ata/core/plan.hpp"
#include "ata/models/scenario.hpp"
#include "ata/sim/experiment.hpp"

namespace ata::apps {

/// A bad command line: run_reporting_errors() prints "<program>: error: <what> (see --help)"
/// and returns exit code 2.
class UsageError : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};

/// What a command-line parser found: the options to run with, or the text --help asked for.
template <typename Options>
struct CommandLine {
  Options options;
  std::optional<std::string> help;  ///< set when --help was given: print it and run nothing
};

/// Parses argv into the options bound to `app` and returns --help's text when it was asked
/// for. Throws UsageError "<flag>: <what>" for a bad command line. Prints nothing and touches
/// no file, so a fuzzer may call it.
std::optional<std::string> parse_arguments(CLI::App& app, int argc, const char* const* argv);

/// Runs `body` and returns its exit code. An exception becomes one line on stderr,
/// "<program>: error: <what>", and exit code 1; a UsageError adds " (see --help)" and exits
/// with 2. Running out of memory or threads gets a plain sentence, not the library's text.
int run_reporting_errors(const char* program, const std::function<int()>& body);

/// "<program>: warning: <what>" on stderr: a run that goes on but will take long.
void warn(const char* program, const std::string& what);

/// CLI11 validators with messages that say what was expected ("must be a whole number from 1
/// to 1000000, got '0x10'"). A whole number is written in decimal digits only: no sign, no
/// hexadecimal, no exponent, and it must fit, so nothing is clamped or read in another base.
/// Attach it with ->transform(), not ->check(): it hands CLI11 the canonical decimal ("010"
/// becomes "10", which CLI11 alone would read as octal 8).
CLI::Validator whole_number(std::uint64_t lowest,
                            std::uint64_t highest = std::numeric_limits<std::uint64_t>::max());
/// A finite decimal number (no hexadecimal) in the interval from `lowest` to `highest`, each
/// end included or not; highest = infinity for no upper end.
CLI::Validator number_in(double lowest, bool lowest_included,
                         double highest = std::numeric_limits<double>::infinity(),
                         bool highest_included = false);
extern const CLI::Validator kPositiveNumber;     ///< number_in(0, false)
extern const CLI::Validator kNonNegativeNumber;  ///< number_in(0, true)
/// A non-empty value: `--json ""` is a mistake, not a request for no output.
extern const CLI::Validator kNonEmpty;
/// A backup mode, "off", "copies" or "on", checked by ata::parse_backup_mode() (every app's
/// `--backups`, so that the apps, the service and the library share one list of names).
extern const CLI::Validator kBackupMode;
/// `--ata-auto-race`, the race ata-auto may choose when it learns its plan (ata-sim, ata-sgd,
/// ata-prox): "fungible", "indexed" or "off"; its help text, and what it sets.
extern const CLI::Validator kAtaAutoRace;
extern const char* const kAtaAutoRaceHelp;
/// AtaAutoPolicy::Options::race for a name kAtaAutoRace accepted: std::nullopt for "off".
[[nodiscard]] std::optional<RaceKind> ata_auto_race(std::string_view name);
/// A comma list of strategies (`--strategies`): every item a name make_policy() knows or one
/// of `extra`, none empty ("ata,,gta" or "," are mistakes).
[[nodiscard]] CLI::Validator strategy_list(std::vector<std::string> extra = {});

/// "race:10 54.2%, quotas 3.1%": each plan ata-auto played, with its share of `rounds`.
[[nodiscard]] std::string played_shares(std::span<const sim::PlayedPlan> played,
                                        std::size_t rounds);

/// "a,b,,c" -> {"a", "b", "", "c"}: the items of a comma list, empty ones kept.
[[nodiscard]] std::vector<std::string> split_list(const std::string& text);
/// A comma list of at most `most` whole numbers (one per worker), each checked by `item` and
/// then by `also` (which returns an error, or nothing); attach with ->transform().
[[nodiscard]] CLI::Validator number_list(const CLI::Validator& item, std::size_t most,
                                         std::function<std::string(std::uint64_t)> also = {});
/// The numbers of a list number_list() accepted.
[[nodiscard]] std::vector<std::uint64_t> numbers_of(const std::string& list);
/// `--cpus`: a number_list() of CPUs this process may use (Linux affinity), at most `most`.
[[nodiscard]] CLI::Validator cpu_list(std::size_t most);
/// The strategies of a `--strategies` list, each once, in order, then the yardsticks every
/// comparison reports against (OFTA and GTA; ata-sim adds EOFTA) when missing.
[[nodiscard]] std::vector<std::string> strategies_with_yardsticks(
    const std::string& list, const std::vector<std::string>& yardsticks = {"ofta", "gta"});

/// The cluster `--scenario` names: a preset with `workers` workers (0: `default_workers`) whose
/// "slowdown" strikes at `change_round`, or a JSON file, whose worker count `workers` (when not
/// 0) must match. A name with a '/' or a '.', or an existing file's, is a file. Throws
/// ata::InvalidArgument naming the flag, the file and the problem.
[[nodiscard]] models::Scenario scenario_from_flag(const std::string& scenario, std::size_t workers,
                                                  std::size_t default_workers,
                                                  std::size_t change_round);

/// The most memory the apps let one structure of a run take (a dataset, a matrix, one round's
/// results), checked before allocating it: 1 GiB.
inline constexpr std::size_t kMaxMemoryBytes = std::size_t{1} << 30;

/// The product of `factors`, or std::nullopt when it does not fit in std::size_t.
[[nodiscard]] std::optional<std::size_t> checked_product(
    std::initializer_list<std::size_t> factors);

/// Throws ata::InvalidArgument "<what> need <size>, more than the limit of 1 GiB<advice>"
/// unless the product of `factors` (bytes) is at most kMaxMemoryBytes.
void require_memory(const std::string& what, std::initializer_list<std::size_t> factors,
                    const std::string& advice);

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

/// Checks, before a run, that `path` can be written as a file: it is not a folder, and its
/// folder exists and takes a new file, or can be created. Throws ata::InvalidArgument
/// "<flag> '<path>': <reason>" otherwise, with the system's reason.
void check_output_file(std::string_view flag, const std::filesystem::path& path);
/// The same for a folder that will receive files (--plot): it is a folder, or can be created.
void check_output_folder(std::string_view flag, const std::filesystem::path& path);

/// Writes `text` to `path` whole or not at all: into a temporary file in the same folder
/// (created if missing), then renamed over `path`, so a failed write leaves a previous file
/// intact. Throws ata::Error "cannot write '<path>': <system's reason>".
void write_file(const std::filesystem::path& path, const std::string& text);

/// A figure for plot_figures(): one line per series.
struct Series {
  std::string label;
  std::vector<double> x;
  std::vector<double> y;
  /// Drawn dotted in the colour of the series before it: the value that series estimates.
  bool reference = false;
};
/// A horizontal bar of a Gantt figure: row (drawn top down), from start for length, coloured
/// by its group ("accepted", "stopped", "restarted" have fixed colours).
struct Bar {
  double row = 0.0;
  double start = 0.0;
  double length = 0.0;
  std::string group;
};
struct Figure {
  std::string file;  // name inside the plot folder
  std::string title;
  std::string xlabel;
  std::string ylabel;
  bool xlog = false;
  bool ylog = false;
  std::vector<Series> series;
  std::vector<Bar> bars = {};  ///< a Gantt figure when not empty (then usually no series)
};

/// Writes every figure as a PNG into `folder` with matplotlib, and returns the paths. The
/// figure data is kept next to them as plot-data.json. The plotter runs as python3 (or
/// $ATA_PYTHON) with an argument vector, no shell, so any folder name is safe. Throws ata::Error
/// when python3 or matplotlib is missing or the plotter fails.
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

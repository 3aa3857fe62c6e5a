#include "app_support.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include "ata/core/error.hpp"
#include "plot_script.hpp"  // generated: kPlotScript, the text of plot.py

namespace ata::apps {

namespace {

CLI::Validator number_check(const char* description, bool whole, double lowest, bool inclusive) {
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        std::size_t used = 0;
        double value = 0.0;
        try {
          value = std::stod(text, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        const bool ok = used == text.size() && !text.empty() && std::isfinite(value) &&
                        (inclusive ? value >= lowest : value > lowest) &&
                        (!whole || (value == std::floor(value) && text.find_first_of(".eE") == std::string::npos));
        return ok ? std::string() : std::string("must be ") + description + ", got '" + text + "'";
      },
      description);
}

}  // namespace

const CLI::Validator kWholeAtLeastOne = number_check("a whole number >= 1", true, 1.0, true);
const CLI::Validator kWholeNonNegative = number_check("a whole number >= 0", true, 0.0, true);
const CLI::Validator kPositiveNumber = number_check("a number > 0", false, 0.0, false);
const CLI::Validator kNonNegativeNumber = number_check("a number >= 0", false, 0.0, true);

std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv, const char* program) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return 0;
  } catch (const CLI::ParseError& e) {
    std::cerr << program << ": error: " << e.what() << " (see --help)\n";
    return 2;
  }
  return std::nullopt;
}

int run_reporting_errors(const char* program, const std::function<int()>& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    std::cerr << program << ": error: " << e.what() << "\n";
    return 1;
  }
}

sim::Scenario scenario_from_flag(const std::string& scenario, std::size_t workers,
                                 std::size_t change_round) {
  for (const auto name : sim::preset_names()) {
    if (scenario == name) return sim::make_preset(name, workers, change_round);
  }
  // Neither a preset nor a file: make_preset throws, listing the presets.
  if (!std::filesystem::exists(scenario)) return sim::make_preset(scenario, 1);
  return sim::load_scenario(scenario);
}

std::string Table::render() const {
  std::vector<std::size_t> width(header_.size(), 0);
  const auto measure = [&](const std::vector<std::string>& row) {
    for (std::size_t c = 0; c < row.size() && c < width.size(); ++c) width[c] = std::max(width[c], row[c].size());
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

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::error_code ignored;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ignored);
  std::ofstream out(path);
  out << text;
  out.close();
  if (!out) throw Error("cannot write '" + path.string() + "'");
}

std::vector<std::filesystem::path> plot_figures(const std::filesystem::path& folder,
                                                const std::vector<Figure>& figures) {
  std::error_code error;
  std::filesystem::create_directories(folder, error);
  if (error) throw Error("cannot create plot folder '" + folder.string() + "': " + error.message());
  nlohmann::json spec;
  std::vector<std::filesystem::path> files;
  for (const auto& f : figures) {
    nlohmann::json series = nlohmann::json::array();
    for (const auto& s : f.series) series.push_back({{"label", s.label}, {"x", s.x}, {"y", s.y}});
    files.push_back(folder / f.file);
    spec["figures"].push_back({{"file", files.back().string()}, {"title", f.title}, {"xlabel", f.xlabel},
                               {"ylabel", f.ylabel}, {"xlog", f.xlog}, {"ylog", f.ylog}, {"series", series}});
  }
  const auto data = folder / "plot-data.json";
  const auto script = folder / ".plot.py";
  write_file(data, spec.dump());
  write_file(script, kPlotScript);
  // Debian's interpreter first: it is the one python3-matplotlib installs into, whatever else
  // (a pyenv or venv) is on PATH. ATA_PYTHON overrides both.
  const char* chosen = std::getenv("ATA_PYTHON");
  const std::string python = chosen && *chosen ? chosen
                             : std::filesystem::exists("/usr/bin/python3") ? "/usr/bin/python3"
                                                                           : "python3";
  const std::string command = python + " '" + script.string() + "' '" + data.string() + "'";
  std::fflush(stdout);
  const int status = std::system(command.c_str());
  std::filesystem::remove(script, error);
  if (status != 0) {
    throw Error("plotting failed (" + python +
                " with matplotlib is needed: scripts/setup installs python3-matplotlib); the data is in '" + data.string() + "'");
  }
  return files;
}

Progress::Progress(std::string label) : label_(std::move(label)), enabled_(isatty(STDERR_FILENO) == 1) {}

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
  std::fprintf(stderr, "\r\033[K%s [%s%s] %3d%% %s", label_.c_str(), std::string(static_cast<std::size_t>(filled), '#').c_str(),
               std::string(static_cast<std::size_t>(20 - filled), '.').c_str(), percent, detail.c_str());
  std::fflush(stderr);
}

}  // namespace ata::apps

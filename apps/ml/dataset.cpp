#include "dataset.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "ata/core/error.hpp"
#include "ata/sim/random.hpp"

namespace ata::ml {

namespace {

struct Entry {
  std::size_t index;
  double value;
};

[[noreturn]] void fail(std::string_view origin, std::size_t line, const std::string& what) {
  throw InvalidArgument("LIBSVM " + std::string(origin) + ", line " + std::to_string(line) + ": " + what);
}

double parse_number(std::string_view token, std::string_view origin, std::size_t line, const char* what) {
  const std::string_view written = token;
  if (token.size() > 1 && token.front() == '+') token.remove_prefix(1);  // from_chars rejects "+1"
  double value = 0.0;
  const auto [end, error] = std::from_chars(token.data(), token.data() + token.size(), value);
  if (error != std::errc() || end != token.data() + token.size() || !std::isfinite(value)) {
    fail(origin, line, std::string("bad ") + what + " '" + std::string(written) + "'");
  }
  return value;
}

}  // namespace

Dataset parse_libsvm(std::string_view text, std::string_view origin) {
  std::vector<std::vector<Entry>> rows;
  std::vector<double> targets;
  std::size_t cols = 0;
  std::size_t line_number = 0;
  std::istringstream lines{std::string(text)};
  std::string line;
  while (std::getline(lines, line)) {
    ++line_number;
    if (const auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream tokens(line);
    std::string token;
    if (!(tokens >> token)) continue;  // blank or comment-only line
    targets.push_back(parse_number(token, origin, line_number, "label"));
    std::vector<Entry> entries;
    std::size_t previous = 0;
    while (tokens >> token) {
      const auto colon = token.find(':');
      if (colon == std::string::npos || colon == 0 || colon + 1 == token.size()) {
        fail(origin, line_number, "expected index:value, got '" + token + "'");
      }
      const std::string_view index_text(token.data(), colon);
      std::size_t index = 0;
      const auto [end, error] = std::from_chars(index_text.data(), index_text.data() + index_text.size(), index);
      if (error != std::errc() || end != index_text.data() + index_text.size()) {
        fail(origin, line_number, "bad feature index '" + std::string(index_text) + "'");
      }
      if (index == 0) fail(origin, line_number, "feature index 0 (LIBSVM indices start at 1)");
      if (index <= previous) {
        fail(origin, line_number, "feature index " + std::to_string(index) + " after " +
                                      std::to_string(previous) + " (indices must increase)");
      }
      previous = index;
      entries.push_back({index, parse_number(std::string_view(token).substr(colon + 1), origin, line_number, "feature value")});
      cols = std::max(cols, index);
    }
    rows.push_back(std::move(entries));
  }
  if (rows.empty()) throw InvalidArgument("LIBSVM " + std::string(origin) + ": no data (empty file?)");
  if (cols == 0) throw InvalidArgument("LIBSVM " + std::string(origin) + ": no features on any line");
  Dataset data;
  data.rows = rows.size();
  data.cols = cols;
  data.features.assign(data.rows * cols, 0.0);
  data.targets = std::move(targets);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    for (const auto& e : rows[i]) data.features[i * cols + e.index - 1] = e.value;
  }
  return data;
}

Dataset load_libsvm(const std::string& path) {
  std::ifstream file(path);
  if (!file) throw InvalidArgument("cannot read LIBSVM file '" + path + "'");
  std::ostringstream text;
  text << file.rdbuf();
  return parse_libsvm(text.str(), path);
}

void as_plus_minus_one(Dataset& data, std::string_view origin) {
  const std::set<double> labels(data.targets.begin(), data.targets.end());
  if (labels.size() != 2) {
    throw InvalidArgument("LIBSVM " + std::string(origin) + ": binary classification needs exactly 2 labels, got " +
                          std::to_string(labels.size()));
  }
  const double low = *labels.begin();
  for (double& y : data.targets) y = y == low ? -1.0 : 1.0;
}

void scale_columns(Dataset& data) {
  for (std::size_t c = 0; c < data.cols; ++c) {
    double largest = 0.0;
    for (std::size_t r = 0; r < data.rows; ++r) largest = std::max(largest, std::abs(data.features[r * data.cols + c]));
    if (largest == 0.0) continue;
    for (std::size_t r = 0; r < data.rows; ++r) data.features[r * data.cols + c] /= largest;
  }
}

namespace {

Dataset gaussian_features(std::size_t rows, std::size_t cols, sim::Rng& rng) {
  Dataset data;
  data.rows = rows;
  data.cols = cols;
  data.features.resize(rows * cols);
  for (double& v : data.features) v = sim::standard_normal(rng);
  data.targets.resize(rows);
  return data;
}

std::vector<double> random_direction(std::size_t cols, sim::Rng& rng) {
  std::vector<double> w(cols);
  for (double& v : w) v = sim::standard_normal(rng);
  return w;
}

double dot(std::span<const double> a, std::span<const double> b) {
  double s = 0.0;
  for (std::size_t j = 0; j < a.size(); ++j) s += a[j] * b[j];
  return s;
}

}  // namespace

Dataset make_classification(std::size_t rows, std::size_t cols, std::uint64_t seed) {
  sim::Rng rng(seed, 0xda7a);
  Dataset data = gaussian_features(rows, cols, rng);
  const auto w = random_direction(cols, rng);
  for (std::size_t i = 0; i < rows; ++i) {
    const double label = dot(data.row(i), w) >= 0.0 ? 1.0 : -1.0;
    data.targets[i] = sim::uniform01(rng) < 0.1 ? -label : label;
  }
  return data;
}

Dataset make_regression(std::size_t rows, std::size_t cols, std::uint64_t seed) {
  sim::Rng rng(seed, 0x7e9);
  Dataset data = gaussian_features(rows, cols, rng);
  const auto w = random_direction(cols, rng);
  for (std::size_t i = 0; i < rows; ++i) data.targets[i] = dot(data.row(i), w) + 0.1 * sim::standard_normal(rng);
  return data;
}

}  // namespace ata::ml

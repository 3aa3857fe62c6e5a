#include "dataset.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>

#include "app_support.hpp"
#include "ata/core/error.hpp"
#include "ata/models/random.hpp"
#include "core/checks.hpp"
#include "models/text_file.hpp"

namespace ata::ml {

namespace {

using ata::detail::excerpt;

[[noreturn]] void fail(std::string_view origin, std::size_t line, const std::string& what) {
  throw InvalidArgument("LIBSVM " + std::string(origin) + ", line " + std::to_string(line) + ": " + what);
}

double parse_number(std::string_view token, std::string_view origin, std::size_t line, const char* what) {
  const std::string_view written = token;
  if (token.size() > 1 && token.front() == '+') token.remove_prefix(1);  // from_chars rejects "+1"
  double value = 0.0;
  const auto [end, error] = std::from_chars(token.data(), token.data() + token.size(), value);
  if (error != std::errc() || end != token.data() + token.size() || !std::isfinite(value)) {
    fail(origin, line, std::string("bad ") + what + " '" + excerpt(written) + "'");
  }
  return value;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

// The next whitespace-separated token of `line`, removed from it; empty at the end.
std::string_view next_token(std::string_view& line) {
  std::size_t start = 0;
  while (start < line.size() && is_space(line[start])) ++start;
  std::size_t end = start;
  while (end < line.size() && !is_space(line[end])) ++end;
  const std::string_view token = line.substr(start, end - start);
  line.remove_prefix(end);
  return token;
}

// Reads every data line of `text`: on_row(label) for each, then on_entry(index, value) for
// each of its pairs. Throws naming the line for anything malformed. Reads in place: the two
// passes of parse_libsvm() copy nothing but the numbers.
template <typename OnRow, typename OnEntry>
void scan(std::string_view text, std::string_view origin, OnRow on_row, OnEntry on_entry) {
  std::size_t line_number = 0;
  while (!text.empty()) {
    ++line_number;
    const std::size_t newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    if (const auto hash = line.find('#'); hash != std::string_view::npos) {
      line = line.substr(0, hash);
    }
    const std::string_view label = next_token(line);
    if (label.empty()) continue;  // blank or comment-only line
    on_row(parse_number(label, origin, line_number, "label"));
    std::size_t previous = 0;
    for (std::string_view token = next_token(line); !token.empty(); token = next_token(line)) {
      const auto colon = token.find(':');
      if (colon == std::string_view::npos || colon == 0 || colon + 1 == token.size()) {
        fail(origin, line_number, "expected index:value, got '" + excerpt(token) + "'");
      }
      const std::string_view index_text = token.substr(0, colon);
      std::size_t index = 0;
      const auto [end, error] = std::from_chars(index_text.data(), index_text.data() + index_text.size(), index);
      if (error == std::errc::result_out_of_range) {
        fail(origin, line_number, "feature index '" + excerpt(index_text) + "' is too large");
      }
      if (error != std::errc() || end != index_text.data() + index_text.size()) {
        fail(origin, line_number, "bad feature index '" + excerpt(index_text) + "'");
      }
      if (index == 0) fail(origin, line_number, "feature index 0 (LIBSVM indices start at 1)");
      if (index <= previous) {
        fail(origin, line_number,
             "feature index " + std::to_string(index) + " after " + std::to_string(previous) +
                 " (indices must increase)");
      }
      previous = index;
      on_entry(index, parse_number(token.substr(colon + 1), origin, line_number, "feature value"));
    }
  }
}

}  // namespace

Dataset parse_libsvm(std::string_view text, std::string_view origin) {
  // First pass: check every line and find the shape, so the dense matrix is sized (and refused
  // if too large) before anything is allocated.
  std::size_t rows = 0;
  std::size_t cols = 0;
  scan(
      text, origin, [&](double) { ++rows; },
      [&](std::size_t index, double) { cols = std::max(cols, index); });
  if (rows == 0) {
    throw InvalidArgument("LIBSVM " + std::string(origin) + ": no data (no line with a label)");
  }
  if (cols == 0) throw InvalidArgument("LIBSVM " + std::string(origin) + ": no features on any line");
  apps::require_memory("LIBSVM " + std::string(origin) + ": " + std::to_string(rows) + " rows x " +
                           std::to_string(cols) + " features (the largest index), stored dense,",
                       {rows, cols, sizeof(double)}, "");
  Dataset data;
  data.rows = rows;
  data.cols = cols;
  data.features.assign(rows * cols, 0.0);
  data.targets.reserve(rows);
  std::size_t row = 0;
  scan(
      text, origin,
      [&](double label) {
        data.targets.push_back(label);
        row = data.targets.size() - 1;
      },
      [&](std::size_t index, double value) { data.features[row * cols + index - 1] = value; });
  return data;
}

Dataset load_libsvm(const std::string& path) {
  return parse_libsvm(ata::detail::read_text_file(path, kMaxLibsvmFileBytes, "LIBSVM file"), path);
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

Dataset gaussian_features(std::size_t rows, std::size_t cols, models::Rng& rng) {
  apps::require_memory(
      "synthetic data of " + std::to_string(rows) + " rows x " + std::to_string(cols) + " features",
      {rows, cols, sizeof(double)}, " (lower --rows or --cols)");
  Dataset data;
  data.rows = rows;
  data.cols = cols;
  data.features.resize(rows * cols);
  for (double& v : data.features) v = models::standard_normal(rng);
  data.targets.resize(rows);
  return data;
}

std::vector<double> random_direction(std::size_t cols, models::Rng& rng) {
  std::vector<double> w(cols);
  for (double& v : w) v = models::standard_normal(rng);
  return w;
}

double dot(std::span<const double> a, std::span<const double> b) {
  double s = 0.0;
  for (std::size_t j = 0; j < a.size(); ++j) s += a[j] * b[j];
  return s;
}

}  // namespace

Dataset make_classification(std::size_t rows, std::size_t cols, std::uint64_t seed) {
  models::Rng rng(seed, 0xda7a);
  Dataset data = gaussian_features(rows, cols, rng);
  const auto w = random_direction(cols, rng);
  for (std::size_t i = 0; i < rows; ++i) {
    const double label = dot(data.row(i), w) >= 0.0 ? 1.0 : -1.0;
    data.targets[i] = models::uniform01(rng) < 0.1 ? -label : label;
  }
  return data;
}

Dataset make_regression(std::size_t rows, std::size_t cols, std::uint64_t seed) {
  models::Rng rng(seed, 0x7e9);
  Dataset data = gaussian_features(rows, cols, rng);
  const auto w = random_direction(cols, rng);
  for (std::size_t i = 0; i < rows; ++i)
    data.targets[i] = dot(data.row(i), w) + 0.1 * models::standard_normal(rng);
  return data;
}

}  // namespace ata::ml

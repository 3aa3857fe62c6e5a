#pragma once
// Datasets for the demo apps: LIBSVM files and a fixed-seed synthetic set, stored dense.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ata::ml {

/// rows x cols features, row-major, and one target per row (a label +-1 for classification,
/// a real value for regression).
struct Dataset {
  std::size_t rows = 0;
  std::size_t cols = 0;
  std::vector<double> features;
  std::vector<double> targets;

  [[nodiscard]] std::span<const double> row(std::size_t i) const {
    return {features.data() + i * cols, cols};
  }
};

/// load_libsvm() refuses larger files.
inline constexpr std::size_t kMaxLibsvmFileBytes = std::size_t{1} << 30;

/// Parses LIBSVM text ("label index:value ..." per line, 1-based increasing indices, '#'
/// comments). Labels are kept as written; classification callers map them to +-1 with
/// as_plus_minus_one(). The data is stored dense, rows x (largest index) numbers: a first pass
/// finds that shape and refuses it beyond apps::kMaxMemoryBytes before allocating. Throws
/// ata::InvalidArgument naming `origin`, the line and the problem (malformed pair, index 0,
/// decreasing or too large index, bad number, no data, too large), quoting input only as a
/// short escaped excerpt.
[[nodiscard]] Dataset parse_libsvm(std::string_view text, std::string_view origin);
/// parse_libsvm() of a file; throws ata::InvalidArgument, with the system's reason, when it
/// cannot be read, is a folder, or is larger than kMaxLibsvmFileBytes.
[[nodiscard]] Dataset load_libsvm(const std::string& path);

/// Maps two distinct labels to -1 (the smaller) and +1; throws unless there are exactly two.
void as_plus_minus_one(Dataset& data, std::string_view origin);

/// Scales every feature column to [-1, 1] by its largest magnitude (LIBSVM's *_scale files
/// already are): keeps step sizes meaningful across datasets.
void scale_columns(Dataset& data);

/// A linearly separable-with-noise classification set: x ~ N(0, I), labels from a fixed-seed
/// random hyperplane with 10% flipped. Reproducible from `seed`. Like make_regression(),
/// throws ata::InvalidArgument when rows x cols numbers exceed apps::kMaxMemoryBytes.
[[nodiscard]] Dataset make_classification(std::size_t rows, std::size_t cols, std::uint64_t seed);

/// A regression set: x ~ N(0, I), y = x'w + N(0, 0.1^2) with a fixed-seed w.
[[nodiscard]] Dataset make_regression(std::size_t rows, std::size_t cols, std::uint64_t seed);

}  // namespace ata::ml

#pragma once
// Argument checks shared by the library's layers; each throws ata::InvalidArgument with a
// message naming the value and what was expected.

#include <cstddef>
#include <string>
#include <string_view>

namespace ata::detail {

/// The shortest text that reads back as `value` ("0.999999999", "1e-09"): std::to_string
/// prints 1e-9 as "0.000000", and "%.6g" rounds 0.999999999 to "1".
std::string to_text(double value);

void require_worker_index(std::size_t worker, std::size_t workers);
/// finite and > 0
void require_positive(double value, const char* name);
/// finite and >= 0
void require_non_negative(double value, const char* name);

/// `text` as it may appear in a one-line message: bytes outside printable ASCII as \xNN, and
/// cut with "..." once `max_chars` characters are out. Input files may hold anything (a binary
/// file, a 1 MB token); an error message must not echo it raw.
std::string excerpt(std::string_view text, std::size_t max_chars = 40);

}  // namespace ata::detail

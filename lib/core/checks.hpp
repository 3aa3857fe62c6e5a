#pragma once
// Argument checks shared by the library's layers; each throws ata::InvalidArgument with a
// message naming the value and what was expected.

#include <cstddef>
#include <string>

namespace ata::detail {

/// "%.6g": std::to_string prints 1e-9 as "0.000000".
std::string to_text(double value);

void require_worker_index(std::size_t worker, std::size_t workers);
/// finite and > 0
void require_positive(double value, const char* name);
/// finite and >= 0
void require_non_negative(double value, const char* name);

}  // namespace ata::detail

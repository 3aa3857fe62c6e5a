// Fuzz target: the LIBSVM loader of ata-sgd and ata-prox (ata::ml::parse_libsvm).
//
// Input: the text of a LIBSVM file. Bad text must give an ata::Error naming the line and the
// problem; any other exception, a crash, undefined behaviour, a hang or an allocation far
// beyond the input's size is a finding. A dataset that loads goes through what the apps do
// next: labels mapped to +-1 and columns scaled.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "dataset.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  ata::fuzz::expect_only_ata_errors([text] {
    ata::ml::Dataset dataset = ata::ml::parse_libsvm(text, "fuzz.libsvm");
    ata::ml::scale_columns(dataset);
    ata::ml::as_plus_minus_one(dataset, "fuzz.libsvm");
  });
  return 0;
}

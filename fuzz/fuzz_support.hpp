#pragma once
// Shared by the fuzz targets: what counts as a finding. A finding aborts, which libFuzzer
// records as a crash (with the input) and the replay tests as a failed test.

#include <cxxabi.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#include <typeinfo>

#include "ata/core/error.hpp"

namespace ata::fuzz {

[[noreturn]] inline void finding(const std::string& what) {
  std::fprintf(stderr, "fuzz finding: %s\n", what.c_str());
  std::abort();
}

// The readable name of an exception's dynamic type, e.g. "std::length_error".
inline std::string type_name(const std::exception& e) {
  int status = 0;
  const std::unique_ptr<char, decltype(&std::free)> name(
      abi::__cxa_demangle(typeid(e).name(), nullptr, nullptr, &status), &std::free);
  return status == 0 && name ? std::string(name.get()) : std::string(typeid(e).name());
}

// Runs `load`, for which an ata::Error (naming the bad value) is the one acceptable answer to
// bad input: any other exception reaching the user would be a raw library message.
template <typename Load>
void expect_only_ata_errors(const Load& load) {
  try {
    load();
  } catch (const ata::Error&) {
  } catch (const std::exception& e) {
    finding("exception not derived from ata::Error: " + type_name(e) + ": " + e.what());
  } catch (...) {
    finding("exception not derived from std::exception");
  }
}

}  // namespace ata::fuzz

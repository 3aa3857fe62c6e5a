#pragma once
/// @file
/// The project's exception types: everything ata throws on purpose derives from ata::Error.

#include <stdexcept>
#include <string>

namespace ata {

/// Base of every exception ata throws on purpose.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A caller passed a value outside what a function accepts; the message names the value and
/// what was expected.
class InvalidArgument : public Error {
 public:
  using Error::Error;
};

}  // namespace ata

#include "models/text_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "ata/core/error.hpp"
#include "models/file_descriptor.hpp"

namespace ata::detail {

std::string read_text_file(const std::string& path, std::size_t max_bytes, std::string_view what) {
  const auto fail = [&](const std::string& reason) -> std::string {
    throw InvalidArgument("cannot read " + std::string(what) + " '" + path + "': " + reason);
  };
  const FileDescriptor file(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (file.get() < 0) fail(std::strerror(errno));
  struct stat info {};
  if (::fstat(file.get(), &info) != 0) fail(std::strerror(errno));
  if (S_ISDIR(info.st_mode)) fail("it is a folder");
  const auto too_large = [&] {
    fail("larger than the limit of " + byte_size(static_cast<double>(max_bytes)));
  };
  // A regular file's size is known up front; a pipe or a device (/dev/zero) is read up to the
  // limit.
  if (S_ISREG(info.st_mode) && static_cast<std::size_t>(info.st_size) > max_bytes) too_large();
  std::string text;
  if (S_ISREG(info.st_mode)) text.reserve(static_cast<std::size_t>(info.st_size));
  char buffer[1 << 16];
  for (;;) {
    const ssize_t got = ::read(file.get(), buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) fail(std::strerror(errno));
    if (got == 0) break;
    if (static_cast<std::size_t>(got) > max_bytes - text.size()) too_large();
    text.append(buffer, static_cast<std::size_t>(got));
  }
  return text;
}

std::string byte_size(double bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"};
  int unit = 0;
  while (bytes >= 1024.0 && unit < 8) {
    bytes /= 1024.0;
    ++unit;
  }
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.3g %s", bytes, units[unit]);
  return buffer;
}

}  // namespace ata::detail

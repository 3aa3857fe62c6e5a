#pragma once
// Reading an input file whole, with a size limit: the simulator's scenario files and the apps'
// data files go through here, so a folder, /dev/zero or a huge file gets a clear error instead
// of an empty read, a hang or the machine's memory.

#include <cstddef>
#include <string>
#include <string_view>

namespace ata::detail {

/// The contents of the file at `path`, at most `max_bytes` of it. Throws ata::InvalidArgument
/// "cannot read <what> '<path>': <reason>" when it cannot be opened or read (the system's
/// reason), is a folder, or is larger than `max_bytes`.
[[nodiscard]] std::string read_text_file(const std::string& path, std::size_t max_bytes,
                                         std::string_view what);

/// A byte count for messages, in binary units: "16 MiB", "2.98 GiB".
[[nodiscard]] std::string byte_size(double bytes);

}  // namespace ata::detail

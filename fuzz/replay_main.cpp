// Replays a fuzz target without libFuzzer: runs its LLVMFuzzerTestOneInput once on each file
// named on the command line, or on each file of a named folder (sorted; names starting with '.'
// skipped). A finding aborts, which fails the CTest test; the last "replaying" line names the
// input. A missing path is an error, and so is finding no input at all, so a wrong path cannot
// make the test pass without running anything.
//
// As scripts/fuzz runs libFuzzer with a memory limit, an input that needs gigabytes is a finding
// here too: past 4 GiB of address space an allocation throws std::bad_alloc, which the targets
// report; under ASan, which reserves terabytes of address space, ASan reports any single
// allocation over 2 GiB.
//
//   fuzz_solver_replay fuzz/corpus/fuzz_solver fuzz/regressions/fuzz_solver
//   fuzz_solver_replay crash-0123abcd

#include <sys/resource.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

#if defined(__SANITIZE_ADDRESS__)
#define ATA_FUZZ_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ATA_FUZZ_ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define ATA_FUZZ_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define ATA_FUZZ_TSAN 1
#endif
#endif

#ifdef ATA_FUZZ_ASAN
// Read by ASan at start-up; ASAN_OPTIONS can override it.
extern "C" const char* __asan_default_options() { return "max_allocation_size_mb=2048"; }
#endif

namespace {

namespace fs = std::filesystem;

void limit_memory() {
#if !defined(ATA_FUZZ_ASAN) && !defined(ATA_FUZZ_TSAN)
  constexpr rlim_t kAddressSpace = rlim_t{4} << 30;
  const rlimit limit{kAddressSpace, kAddressSpace};
  setrlimit(RLIMIT_AS, &limit);
#endif
}

// The files to replay for one argument; nothing, with a message, if it cannot be read.
std::optional<std::vector<fs::path>> inputs_of(const char* program, const fs::path& path) {
  std::error_code code;
  if (fs::is_regular_file(path, code)) return std::vector<fs::path>{path};
  if (!fs::is_directory(path, code)) {
    std::fprintf(stderr, "%s: '%s' is neither a file nor a folder\n", program, path.c_str());
    return std::nullopt;
  }
  std::vector<fs::path> files;
  for (fs::directory_iterator it(path, code), end; !code && it != end; it.increment(code)) {
    const fs::path& file = it->path();
    if (file.filename().string().starts_with('.')) continue;
    if (it->is_regular_file(code)) files.push_back(file);
  }
  if (code) {
    std::fprintf(stderr, "%s: cannot list '%s': %s\n", program, path.c_str(),
                 code.message().c_str());
    return std::nullopt;
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE_OR_FOLDER...\n", argv[0]);
    return 2;
  }
  limit_memory();
  std::size_t replayed = 0;
  for (int arg = 1; arg < argc; ++arg) {
    const std::optional<std::vector<fs::path>> files = inputs_of(argv[0], argv[arg]);
    if (!files) return 2;
    for (const fs::path& file : *files) {
      std::error_code code;
      const std::uintmax_t size = fs::file_size(file, code);
      std::ifstream stream(file, std::ios::binary);
      // Exactly the input's size on the heap, so ASan catches a read past its end.
      std::vector<std::uint8_t> bytes(code ? 0 : size);
      stream.read(reinterpret_cast<char*>(bytes.data()),
                  static_cast<std::streamsize>(bytes.size()));
      if (code || !stream) {
        std::fprintf(stderr, "%s: cannot read '%s'\n", argv[0], file.c_str());
        return 2;
      }
      std::printf("replaying %s (%zu bytes)\n", file.c_str(), bytes.size());
      std::fflush(stdout);
      LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
      ++replayed;
    }
  }
  if (replayed == 0) {
    std::fprintf(stderr, "%s: no input found in the paths given\n", argv[0]);
    return 2;
  }
  std::printf("replayed %zu inputs without a finding\n", replayed);
  return 0;
}

# ATA_SANITIZE builds every target with sanitizers. scripts/test uses each in its own build
# directory:
# - "address,undefined": AddressSanitizer + UndefinedBehaviorSanitizer, the whole test suite
#   (build-asan/). Undefined behaviour aborts instead of printing and carrying on, so a report
#   fails the test. GCC's "undefined" leaves out float-cast-overflow (a double too large for
#   its integer type), which clang's includes: added so both compilers check it.
# - "thread": ThreadSanitizer, the runtime tests (build-tsan/).
# The run-time options (halt on the first report, exit codes) are set by scripts/test.
set(ATA_SANITIZE "" CACHE STRING "Sanitizers to build with: empty (none), address,undefined or thread")
set_property(CACHE ATA_SANITIZE PROPERTY STRINGS "" "address,undefined" thread)
if(ATA_SANITIZE STREQUAL "thread")
  add_compile_options(-fsanitize=thread)
  add_link_options(-fsanitize=thread)
elseif(ATA_SANITIZE STREQUAL "address,undefined")
  set(ata_sanitize_flags -fsanitize=address,undefined)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    list(APPEND ata_sanitize_flags -fsanitize=float-cast-overflow)
  endif()
  add_compile_options(${ata_sanitize_flags} -fno-sanitize-recover=all -fno-omit-frame-pointer)
  add_link_options(${ata_sanitize_flags})
elseif(NOT ATA_SANITIZE STREQUAL "")
  message(FATAL_ERROR
          "ATA_SANITIZE must be empty, 'address,undefined' or 'thread', got '${ATA_SANITIZE}'")
endif()
# scripts/test compiles the sanitized builds at -O1, where g++ 12 reports a false
# maybe-uninitialized inside Boost.Asio's use_future (async_completion's handler), which
# -Werror would turn into an error. The release build keeps the warning, at -O2, for ata's own
# code.
if(NOT ATA_SANITIZE STREQUAL "" AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  add_compile_options(-Wno-maybe-uninitialized)
endif()

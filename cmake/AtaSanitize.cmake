# ATA_SANITIZE=thread builds every target with ThreadSanitizer. scripts/test uses it in a
# separate build directory (build-tsan) to check the runtime's synchronisation.
set(ATA_SANITIZE "" CACHE STRING "Sanitizer to build with: empty (none) or thread")
set_property(CACHE ATA_SANITIZE PROPERTY STRINGS "" thread)
if(ATA_SANITIZE STREQUAL "thread")
  add_compile_options(-fsanitize=thread)
  add_link_options(-fsanitize=thread)
elseif(NOT ATA_SANITIZE STREQUAL "")
  message(FATAL_ERROR "ATA_SANITIZE must be empty or 'thread', got '${ATA_SANITIZE}'")
endif()

# ata_add_catch_tests(target TIMEOUT seconds)
#
# Registers every Catch2 test case of `target` as its own CTest test, with the case's tags as
# CTest labels (so `ctest -L core` runs one area) and a TIMEOUT, because Catch2 has no
# per-test timeout and a deadlock must fail fast. Catch2 3.7 (Debian's) has no
# ADD_TAGS_AS_LABELS, so the cases are listed with the JSON reporter when ctest starts.
set(ATA_CATCH_REGISTER_SCRIPT "${CMAKE_CURRENT_LIST_DIR}/AtaCatchRegister.cmake")

function(ata_add_catch_tests target)
  cmake_parse_arguments(ARG "" "TIMEOUT" "" ${ARGN})
  if(NOT ARG_TIMEOUT)
    message(FATAL_ERROR "ata_add_catch_tests(${target}): TIMEOUT is required")
  endif()
  set(include_file "${CMAKE_CURRENT_BINARY_DIR}/${target}_catch_tests.cmake")
  file(GENERATE OUTPUT "${include_file}" CONTENT
"include([==[${ATA_CATCH_REGISTER_SCRIPT}]==])
ata_catch_register([==[$<TARGET_FILE:${target}>]==] [==[${ARG_TIMEOUT}]==] [==[${target}]==])
")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${include_file}")
endfunction()

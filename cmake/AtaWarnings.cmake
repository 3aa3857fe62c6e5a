# ata_set_warnings(target): the project's warning flags, as errors with ATA_WERROR=ON.
function(ata_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wconversion
                                           -Wno-sign-conversion)
  if(ATA_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

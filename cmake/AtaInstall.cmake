# Installs the library with an exported CMake package: find_package(ata CONFIG) + ata::ata,
# and, when the MPI back-end was built, its component: find_package(ata CONFIG COMPONENTS mpi)
# + ata::mpi; likewise COMPONENTS prometheus + ata::prometheus.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(ATA_CMAKE_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/ata")

install(TARGETS ata EXPORT ataTargets
        ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}"
        LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}"
        INCLUDES DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")
install(DIRECTORY "${PROJECT_SOURCE_DIR}/include/ata" DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")
install(EXPORT ataTargets NAMESPACE ata:: DESTINATION "${ATA_CMAKE_DIR}")

# ata::mpi in an export set of its own, so that ataConfig.cmake imports it (and looks for MPI)
# only for a consumer that asks for the component.
if(TARGET ata_mpi)
  install(TARGETS ata_mpi EXPORT ataMpiTargets
          ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}"
          LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}")
  install(EXPORT ataMpiTargets NAMESPACE ata:: DESTINATION "${ATA_CMAKE_DIR}")
endif()

# ata::prometheus likewise, for a consumer that asks for the component prometheus.
if(TARGET ata_prometheus)
  install(TARGETS ata_prometheus EXPORT ataPrometheusTargets
          ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}"
          LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}")
  install(EXPORT ataPrometheusTargets NAMESPACE ata:: DESTINATION "${ATA_CMAKE_DIR}")
endif()

configure_package_config_file("${PROJECT_SOURCE_DIR}/cmake/ataConfig.cmake.in"
                              "${PROJECT_BINARY_DIR}/ataConfig.cmake"
                              INSTALL_DESTINATION "${ATA_CMAKE_DIR}")
write_basic_package_version_file("${PROJECT_BINARY_DIR}/ataConfigVersion.cmake"
                                 COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/ataConfig.cmake" "${PROJECT_BINARY_DIR}/ataConfigVersion.cmake"
        DESTINATION "${ATA_CMAKE_DIR}")

# cmake -P script: install, then build and run examples/consumer against the installed tree;
# with WITH_MPI, build its ata::mpi consumer too (built, not run: that takes mpirun); with
# WITH_PROMETHEUS, build and run its ata::prometheus consumer.
file(REMOVE_RECURSE "${WORK_DIR}")
set(prefix "${WORK_DIR}/prefix")

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    list(JOIN ARGN " " command)
    message(FATAL_ERROR "failed (${status}): ${command}")
  endif()
endfunction()

run("${CMAKE_COMMAND}" --install "${ATA_BINARY_DIR}" --prefix "${prefix}")
# As on a machine without MPI: ata::ata alone must not need it, even from an install with
# ata::mpi.
run("${CMAKE_COMMAND}" -S "${CONSUMER_SOURCE_DIR}" -B "${WORK_DIR}/build"
    "-DCMAKE_PREFIX_PATH=${prefix}" "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}"
    -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON)
run("${CMAKE_COMMAND}" --build "${WORK_DIR}/build")
run("${WORK_DIR}/build/consumer")

if(WITH_MPI)
  run("${CMAKE_COMMAND}" -S "${CONSUMER_SOURCE_DIR}" -B "${WORK_DIR}/build-mpi"
      "-DCMAKE_PREFIX_PATH=${prefix}" "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}"
      -DCONSUMER_WITH_MPI=ON)
  run("${CMAKE_COMMAND}" --build "${WORK_DIR}/build-mpi" --target consumer_mpi)
endif()

if(WITH_PROMETHEUS)
  run("${CMAKE_COMMAND}" -S "${CONSUMER_SOURCE_DIR}" -B "${WORK_DIR}/build-prometheus"
      "-DCMAKE_PREFIX_PATH=${prefix}" "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}"
      -DCONSUMER_WITH_PROMETHEUS=ON)
  run("${CMAKE_COMMAND}" --build "${WORK_DIR}/build-prometheus" --target consumer_prometheus)
  run("${WORK_DIR}/build-prometheus/consumer_prometheus")
endif()

# tests/dist/ — the distributed tests. test_group_*.c run as one plain process (local groups, a
# launch without mpirun); test_mpi_*.c run under mpirun with 2 and with 4 ranks (oversubscribed
# on small machines), each rank a process of the test, the test passing when every rank exits 0
# and none printed a failed check; test_tp_*.c are plain processes that launch the tessera
# program under mpirun themselves. Included from CMakeLists.txt.
file(GLOB _dist_tests CONFIGURE_DEPENDS "${CMAKE_SOURCE_DIR}/tests/dist/test_*.c")
if(NOT TSR_HAVE_MPI) # a build without MPI has local groups only
  list(FILTER _dist_tests EXCLUDE REGEX "/test_(mpi|tp)_[^/]*\\.c$")
endif()
# Tests that exercise threads; `make tsan` runs these (label concurrency).
set(TSR_DIST_CONCURRENCY_TESTS test_mpi_spi test_mpi_graph)
set(TSR_MPIRUN ${MPIEXEC_EXECUTABLE} --allow-run-as-root --oversubscribe)
foreach(_src IN LISTS _dist_tests)
  get_filename_component(_name ${_src} NAME_WE)
  add_executable(${_name} ${_src})
  target_include_directories(${_name} PRIVATE ${CMAKE_SOURCE_DIR}/tests)
  target_compile_options(${_name} PRIVATE ${TSR_WARNINGS})
  target_compile_definitions(${_name} PRIVATE _GNU_SOURCE
    TSR_TEST_DATA_DIR="${CMAKE_SOURCE_DIR}/tests/data")
  target_link_libraries(${_name} PRIVATE tessera PkgConfig::CJSON Threads::Threads m)
  if(_name MATCHES "^test_mpi_")
    target_link_libraries(${_name} PRIVATE MPI::MPI_C)
  endif()
  if(_name MATCHES "^test_tp_") # launches the tessera program under mpirun itself
    target_compile_definitions(${_name} PRIVATE TSR_MPIEXEC="${MPIEXEC_EXECUTABLE}"
      TSR_TOOL_PATH="$<TARGET_FILE:tessera_cli>")
  endif()
  set(_labels unit dist)
  if(_name IN_LIST TSR_DIST_CONCURRENCY_TESTS)
    list(APPEND _labels concurrency)
  endif()
  set(_ranks 2 4)
  if(_name STREQUAL "test_mpi_nccl") # one GPU per rank: a one-GPU machine runs the 1-rank case
    set(_ranks 1 2)
  endif()
  if(_name MATCHES "^test_mpi_")
    foreach(_np IN LISTS _ranks)
      add_test(NAME ${_name}_np${_np}
        COMMAND ${TSR_MPIRUN} -np ${_np} $<TARGET_FILE:${_name}>)
      set_tests_properties(${_name}_np${_np} PROPERTIES TIMEOUT 180 LABELS "${_labels}"
        FAIL_REGULAR_EXPRESSION "check failed;MPI_ABORT;ERROR: AddressSanitizer;WARNING: ThreadSanitizer")
      if(TSR_SANITIZE MATCHES "address")
        # OpenMPI leaks at MPI_Finalize from components it has already unloaded, so LeakSanitizer
        # sees "<unknown module>" frames that no suppression can name. Leak detection is off for
        # the mpirun tests only: ASan's other checks stay, each test still ends on the ledger's
        # zero (CHECK_NO_LEAKS), and test_group_local runs the group code under LeakSanitizer.
        set_tests_properties(${_name}_np${_np} PROPERTIES
          ENVIRONMENT "ASAN_OPTIONS=detect_leaks=0:abort_on_error=1")
      endif()
    endforeach()
  else()
    add_test(NAME ${_name} COMMAND ${_name})
    set_tests_properties(${_name} PROPERTIES TIMEOUT 120 LABELS "${_labels}")
    if(_name MATCHES "^test_tp_" AND TSR_SANITIZE MATCHES "address")
      # the program it launches under mpirun meets OpenMPI's leaks at MPI_Finalize (above)
      set_tests_properties(${_name} PROPERTIES
        ENVIRONMENT "ASAN_OPTIONS=detect_leaks=0:abort_on_error=1")
    endif()
  endif()
endforeach()

# cmake/kernel_tests.cmake — the kernel gate as the first test, its mutation tests, and (CUDA
# builds) the kernel-module tests. Included from the tests section of CMakeLists.txt, after every
# other test is defined: each of them then requires the gate's fixture, so ctest runs the gate
# before any of them and does not run them when it fails.

add_test(NAME check_kernel_sources
         COMMAND check_kernel_sources --src "${CMAKE_SOURCE_DIR}/src")
set_tests_properties(check_kernel_sources PROPERTIES FIXTURES_SETUP kernel_gate LABELS unit
                     TIMEOUT 60)
add_test(NAME check_kernel_sources_mutations
         COMMAND bash "${CMAKE_SOURCE_DIR}/tests/cuda/kernel_gate_mutations.sh"
                 "$<TARGET_FILE:check_kernel_sources>" "${CMAKE_SOURCE_DIR}/src")
set_tests_properties(check_kernel_sources_mutations PROPERTIES LABELS unit TIMEOUT 120)

if(TSR_HAVE_CUDA)
  # The CUDA module code and what it uses, compiled again as a static library for these tests:
  # the shared library hides its internals, and these tests drive them directly (the JIT without
  # a GPU; both module paths, launched, with one).
  add_library(tessera_cuda_internal STATIC
    "${CMAKE_SOURCE_DIR}/src/base/sha256.c" "${CMAKE_SOURCE_DIR}/src/base/disk_cache.c"
    "${CMAKE_SOURCE_DIR}/src/base/kernel_sources.c" "${CMAKE_SOURCE_DIR}/src/base/env.c"
    "${CMAKE_SOURCE_DIR}/src/base/log.c" "${CMAKE_SOURCE_DIR}/src/base/status.c"
    "${CMAKE_SOURCE_DIR}/src/cuda/jit.c" "${CMAKE_SOURCE_DIR}/src/cuda/modules.c"
    ${TSR_KERNEL_GENERATED_SOURCES})
  target_include_directories(tessera_cuda_internal
    PUBLIC "${CMAKE_SOURCE_DIR}/include" "${CMAKE_SOURCE_DIR}/src")
  target_compile_options(tessera_cuda_internal PRIVATE ${TSR_WARNINGS})
  target_compile_definitions(tessera_cuda_internal PRIVATE _GNU_SOURCE TSR_HAVE_CUDA=1
    TSR_VERSION_STRING="${PROJECT_VERSION}")
  target_link_libraries(tessera_cuda_internal PUBLIC CUDA::cudart_static CUDA::nvrtc
    Threads::Threads m)

  foreach(_name test_kernel_cache test_kernel_jit_aot)
    add_executable(${_name} "${CMAKE_SOURCE_DIR}/tests/cuda/${_name}.c")
    target_include_directories(${_name} PRIVATE "${CMAKE_SOURCE_DIR}/tests")
    target_compile_options(${_name} PRIVATE ${TSR_WARNINGS})
    target_compile_definitions(${_name} PRIVATE _GNU_SOURCE)
    target_link_libraries(${_name} PRIVATE tessera_cuda_internal)
  endforeach()
  add_test(NAME test_kernel_cache COMMAND test_kernel_cache)
  set_tests_properties(test_kernel_cache PROPERTIES LABELS unit TIMEOUT 600)
  # The GPU test once per TSR_KERNELS value; without a GPU each reports "no GPU: skipped" and
  # exits 77, which ctest shows as skipped.
  foreach(_path auto jit aot)
    add_test(NAME test_kernel_jit_aot_${_path} COMMAND test_kernel_jit_aot)
    set_tests_properties(test_kernel_jit_aot_${_path} PROPERTIES LABELS "unit;gpu" TIMEOUT 600
      SKIP_RETURN_CODE 77
      ENVIRONMENT "TSR_KERNELS=${_path};TSR_CACHE_DIR=${CMAKE_BINARY_DIR}/test-kernel-cache")
  endforeach()
endif()

get_property(_all_tests DIRECTORY PROPERTY TESTS)
foreach(_test IN LISTS _all_tests)
  if(NOT _test STREQUAL "check_kernel_sources")
    set_property(TEST ${_test} APPEND PROPERTY FIXTURES_REQUIRED kernel_gate)
  endif()
endforeach()

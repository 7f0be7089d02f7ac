# tests/backend/conformance.cmake — the backend conformance harness is one test built from the
# files of this folder: test_backend_conformance.c is made a test by the glob in CMakeLists.txt
# like every tests/*/test_*.c; this adds the harness and the case tables to it. Included from the
# tests section of CMakeLists.txt, after that glob's loop.
file(GLOB _conformance_sources CONFIGURE_DEPENDS "${CMAKE_SOURCE_DIR}/tests/backend/*.c")
list(FILTER _conformance_sources EXCLUDE REGEX "/test_[^/]*\\.c$")
target_sources(test_backend_conformance PRIVATE ${_conformance_sources})
# Every backend present runs here: without a usable GPU it prints one line and passes.
set_tests_properties(test_backend_conformance PROPERTIES LABELS "unit;gpu")

# cmake/kernels.cmake — kernel shipping (DESIGN.md, "Quantized formats and kernels"): embeds the
# kernel sources listed in src/cuda/kernels/SHA256SUMS into libtessera (every build, CPU-only
# included: they are plain bytes), builds the AOT fatbins with nvcc (CUDA builds), and builds the
# gate tools/check-kernel-sources, which runs as soon as it links (right after the library) and
# fails the build when the embedded bytes, the files and the manifest disagree.
include("${CMAKE_CURRENT_LIST_DIR}/kernel_manifest.cmake")

set(TSR_KERNEL_MANIFEST "${CMAKE_SOURCE_DIR}/src/cuda/kernels/SHA256SUMS")
set(TSR_KERNEL_GENERATED "${CMAKE_BINARY_DIR}/generated")
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${TSR_KERNEL_MANIFEST}")
tsr_kernel_manifest_names("${TSR_KERNEL_MANIFEST}" TSR_KERNEL_SOURCE_NAMES)
set(TSR_KERNEL_SOURCE_FILES "")
foreach(_name IN LISTS TSR_KERNEL_SOURCE_NAMES)
  list(APPEND TSR_KERNEL_SOURCE_FILES "${CMAKE_SOURCE_DIR}/src/${_name}")
endforeach()

# The AOT specializations: the one list. Each is "kernel|options"; the kernel is
# src/cuda/kernels/<kernel>.cuh and its entry tsr_<kernel>. Every other specialization is JIT.
set(TSR_AOT_SPECIALIZATIONS
    "dequantize|-DTSR_QF_MODE=0 -DTSR_QF_BITS=4 -DTSR_QF_GROUP_SIZE=64"
    "dequantize|-DTSR_QF_MODE=0 -DTSR_QF_BITS=8 -DTSR_QF_GROUP_SIZE=32"
    "elementwise|-DTSR_EW_BINARY=add -DTSR_EW_IN0=float32 -DTSR_EW_IN1=float32 -DTSR_EW_COMPUTE=float32 -DTSR_EW_OUT=float32 -DTSR_EW_FLAT=1"
    "elementwise|-DTSR_EW_BINARY=multiply -DTSR_EW_IN0=float32 -DTSR_EW_IN1=float32 -DTSR_EW_COMPUTE=float32 -DTSR_EW_OUT=float32 -DTSR_EW_FLAT=1"
    "elementwise|-DTSR_EW_UNARY=silu -DTSR_EW_IN0=float32 -DTSR_EW_OUT=float32 -DTSR_EW_FLAT=1"
    "elementwise|-DTSR_EW_BINARY=add -DTSR_EW_IN0=bfloat16 -DTSR_EW_IN1=bfloat16 -DTSR_EW_COMPUTE=bfloat16 -DTSR_EW_OUT=bfloat16 -DTSR_EW_FLAT=1"
    "elementwise|-DTSR_EW_BINARY=multiply -DTSR_EW_IN0=bfloat16 -DTSR_EW_IN1=bfloat16 -DTSR_EW_COMPUTE=bfloat16 -DTSR_EW_OUT=bfloat16 -DTSR_EW_FLAT=1"
    "elementwise|-DTSR_EW_UNARY=silu -DTSR_EW_IN0=bfloat16 -DTSR_EW_OUT=bfloat16 -DTSR_EW_FLAT=1"
    "elementwise|-DTSR_EW_BINARY=add -DTSR_EW_IN0=float16 -DTSR_EW_IN1=float16 -DTSR_EW_COMPUTE=float16 -DTSR_EW_OUT=float16 -DTSR_EW_FLAT=1"
    "elementwise|-DTSR_EW_BINARY=multiply -DTSR_EW_IN0=float16 -DTSR_EW_IN1=float16 -DTSR_EW_COMPUTE=float16 -DTSR_EW_OUT=float16 -DTSR_EW_FLAT=1"
    "elementwise|-DTSR_EW_UNARY=silu -DTSR_EW_IN0=float16 -DTSR_EW_OUT=float16 -DTSR_EW_FLAT=1"
    "elementwise|-DTSR_EW_ASTYPE -DTSR_EW_IN0=float32 -DTSR_EW_OUT=bfloat16 -DTSR_EW_FLAT=1"
    "elementwise|-DTSR_EW_ASTYPE -DTSR_EW_IN0=bfloat16 -DTSR_EW_OUT=float32 -DTSR_EW_FLAT=1"
    "elementwise|-DTSR_EW_ASTYPE -DTSR_EW_IN0=float32 -DTSR_EW_OUT=float16 -DTSR_EW_FLAT=1"
    "elementwise|-DTSR_EW_ASTYPE -DTSR_EW_IN0=float16 -DTSR_EW_OUT=float32 -DTSR_EW_FLAT=1"
    "dequantize|-DTSR_QF_MODE=1 -DTSR_QF_BITS=4 -DTSR_QF_GROUP_SIZE=32")
# TSR_AOT_EXTRA: a file of more "kernel|options" lines (TSR_KERNEL_RECORD's format) to build as
# well, e.g. every specialization a JIT run of the suite loaded, so that the suite can run with
# TSR_KERNELS=aot (scripts/test-gpu.sh, AOT_SET=suite). Duplicates are dropped.
set(TSR_AOT_EXTRA "" CACHE FILEPATH "A file of more AOT specializations, one kernel|options a line")
if(TSR_AOT_EXTRA)
  file(STRINGS "${TSR_AOT_EXTRA}" _extra_specs)
  list(APPEND TSR_AOT_SPECIALIZATIONS ${_extra_specs})
  list(REMOVE_DUPLICATES TSR_AOT_SPECIALIZATIONS)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${TSR_AOT_EXTRA}")
endif()
# sm_90 machine code plus compute_90 PTX, which newer GPUs compile when they load the module.
# The oldest compute capability they run on (recorded, so the loader uses the JIT below it).
set(TSR_AOT_GENCODE "arch=compute_90,code=[sm_90,compute_90]")
set(TSR_AOT_MIN_CC 90)

set(_embed "${CMAKE_SOURCE_DIR}/cmake/embed_kernels.cmake")
set(_embed_deps "${_embed}" "${CMAKE_SOURCE_DIR}/cmake/kernel_manifest.cmake"
    "${TSR_KERNEL_MANIFEST}" ${TSR_KERNEL_SOURCE_FILES})
add_custom_command(OUTPUT "${TSR_KERNEL_GENERATED}/kernel_sources_data.c"
  COMMAND "${CMAKE_COMMAND}" -DMODE=sources "-DSOURCE_DIR=${CMAKE_SOURCE_DIR}/src"
          "-DMANIFEST=${TSR_KERNEL_MANIFEST}"
          "-DOUTPUT=${TSR_KERNEL_GENERATED}/kernel_sources_data.c" -P "${_embed}"
  DEPENDS ${_embed_deps}
  COMMENT "Embedding the kernel sources" VERBATIM)
set(TSR_KERNEL_GENERATED_SOURCES "${TSR_KERNEL_GENERATED}/kernel_sources_data.c")

# Each specialization's fatbin; its entry is tsr_<kernel>_aot_<12 hex of SHA-256(options)>, so no
# two modules (JIT ones are _jit_...) share a symbol name.
if(TSR_HAVE_CUDA)
  set(_records "")
  set(_fatbins "")
  set(_index 0)
  foreach(_spec IN LISTS TSR_AOT_SPECIALIZATIONS)
    string(REPLACE "|" ";" _fields "${_spec}")
    list(GET _fields 0 _kernel)
    list(GET _fields 1 _options)
    if(_options MATCHES "[\"\\\\|;]")
      message(FATAL_ERROR "AOT options may not contain quotes, backslashes, | or ;: ${_options}")
    endif()
    string(SHA256 _options_hash "${_options}")
    string(SUBSTRING "${_options_hash}" 0 12 _options_hash)
    set(_symbol "tsr_${_kernel}_aot_${_options_hash}")
    set(_fatbin "${TSR_KERNEL_GENERATED}/aot/${_index}_${_kernel}.fatbin")
    separate_arguments(_option_args UNIX_COMMAND "${_options}")
    add_custom_command(OUTPUT "${_fatbin}"
      COMMAND "${CUDAToolkit_NVCC_EXECUTABLE}" -fatbin -x cu -std=c++17
              "-I${CMAKE_SOURCE_DIR}/src" -gencode "${TSR_AOT_GENCODE}"
              "-DTSR_KERNEL_SUFFIX=_aot_${_options_hash}" ${_option_args}
              "${CMAKE_SOURCE_DIR}/src/cuda/kernels/${_kernel}.cuh" -o "${_fatbin}"
      DEPENDS ${TSR_KERNEL_SOURCE_FILES}
      COMMENT "nvcc: AOT ${_kernel} ${_options}" VERBATIM)
    list(APPEND _records "${_kernel}|${_options}|${_symbol}|${_fatbin}")
    list(APPEND _fatbins "${_fatbin}")
    math(EXPR _index "${_index} + 1")
  endforeach()
  file(MAKE_DIRECTORY "${TSR_KERNEL_GENERATED}/aot")
  file(CONFIGURE OUTPUT "${TSR_KERNEL_GENERATED}/aot_specs.cmake"
       CONTENT "set(TSR_AOT_RECORDS \"@_records@\")\nset(TSR_AOT_MIN_CC @TSR_AOT_MIN_CC@)\n"
       @ONLY)
  enable_language(ASM) # the fatbins' bytes: kernel_aot_data.c.s, .incbin (embed_kernels.cmake)
  add_custom_command(OUTPUT "${TSR_KERNEL_GENERATED}/kernel_aot_data.c"
                            "${TSR_KERNEL_GENERATED}/kernel_aot_data.c.s"
    COMMAND "${CMAKE_COMMAND}" -DMODE=aot "-DSOURCE_DIR=${CMAKE_SOURCE_DIR}/src"
            "-DMANIFEST=${TSR_KERNEL_MANIFEST}" "-DSPECS=${TSR_KERNEL_GENERATED}/aot_specs.cmake"
            "-DOUTPUT=${TSR_KERNEL_GENERATED}/kernel_aot_data.c" -P "${_embed}"
    DEPENDS ${_embed_deps} ${_fatbins} "${TSR_KERNEL_GENERATED}/aot_specs.cmake"
    COMMENT "Embedding the AOT kernel modules" VERBATIM)
  list(APPEND TSR_KERNEL_GENERATED_SOURCES "${TSR_KERNEL_GENERATED}/kernel_aot_data.c"
       "${TSR_KERNEL_GENERATED}/kernel_aot_data.c.s")
endif()

# The library's kernel parts: the generated tables, and NVRTC for the JIT (linked dynamically:
# it is part of the toolkit, not the driver, and loads on a machine without one).
target_sources(tessera PRIVATE ${TSR_KERNEL_GENERATED_SOURCES})
if(TSR_HAVE_CUDA)
  target_link_libraries(tessera PRIVATE CUDA::nvrtc)
endif()

# The gate: it runs as soon as it links (after the library, before any test can run) and again
# as the first test (the fixture every test requires).
add_executable(check_kernel_sources "${CMAKE_SOURCE_DIR}/tools/check-kernel-sources/main.c")
set_target_properties(check_kernel_sources PROPERTIES OUTPUT_NAME check-kernel-sources)
target_compile_options(check_kernel_sources PRIVATE ${TSR_WARNINGS})
target_compile_definitions(check_kernel_sources PRIVATE _GNU_SOURCE)
target_include_directories(check_kernel_sources PRIVATE "${CMAKE_SOURCE_DIR}/src")
target_sources(check_kernel_sources PRIVATE "${CMAKE_SOURCE_DIR}/src/base/sha256.c")
target_link_libraries(check_kernel_sources PRIVATE tessera)
add_custom_command(TARGET check_kernel_sources POST_BUILD
  COMMAND check_kernel_sources --src "${CMAKE_SOURCE_DIR}/src"
  COMMENT "Gate: the embedded kernel sources equal src/ and SHA256SUMS" VERBATIM)

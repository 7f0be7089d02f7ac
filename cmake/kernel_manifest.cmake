# cmake/kernel_manifest.cmake — reading src/cuda/kernels/SHA256SUMS (the one list of embedded kernel
# sources, in `sha256sum` format, names relative to src/) and hashing include closures. Included
# both by the configure step (cmake/kernels.cmake) and by the build-time script
# (cmake/embed_kernels.cmake), so the two read the list the same way.

# The names, in the manifest's order. A malformed line stops the configure (or the build).
function(tsr_kernel_manifest_names manifest out_var)
  file(STRINGS "${manifest}" _lines)
  set(_names "")
  foreach(_line IN LISTS _lines)
    if(NOT _line MATCHES "^[0-9a-f][0-9a-f]*  ([^ ].*)$")
      message(FATAL_ERROR "${manifest}: not a `sha256sum` line: '${_line}'")
    endif()
    list(APPEND _names "${CMAKE_MATCH_1}")
  endforeach()
  set(${out_var} "${_names}" PARENT_SCOPE)
endfunction()

# The names `root` includes with `#include "X"`, transitively (root included), that are embedded.
# The same rule as tsri_kernel_source_closure (src/base/kernel_sources.c).
function(tsr_kernel_closure source_dir names root out_var)
  set(_closure "")
  set(_pending "${root}")
  while(_pending)
    list(POP_FRONT _pending _name)
    if(_name IN_LIST _closure)
      continue()
    endif()
    list(APPEND _closure "${_name}")
    file(STRINGS "${source_dir}/${_name}" _includes REGEX "^[ \t]*#[ \t]*include[ \t]*\"[^\"]+\"")
    foreach(_line IN LISTS _includes)
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\".*$" "\\1" _included "${_line}")
      if(_included IN_LIST names)
        list(APPEND _pending "${_included}")
      endif()
    endforeach()
  endwhile()
  set(${out_var} "${_closure}" PARENT_SCOPE)
endfunction()

# SHA-256 over "NAME\nSHA256\n" for each source of root's closure, in the manifest's order: the
# same value as tsri_kernel_source_closure_sha256.
function(tsr_kernel_closure_sha256 source_dir names root out_var)
  tsr_kernel_closure("${source_dir}" "${names}" "${root}" _closure)
  set(_text "")
  foreach(_name IN LISTS names)
    if(_name IN_LIST _closure)
      file(SHA256 "${source_dir}/${_name}" _hash)
      string(APPEND _text "${_name}\n${_hash}\n")
    endif()
  endforeach()
  string(SHA256 _sum "${_text}")
  set(${out_var} "${_sum}" PARENT_SCOPE)
endfunction()

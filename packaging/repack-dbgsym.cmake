# Run by CPack after it has built the packages (CPACK_POST_BUILD_SCRIPTS): puts right the two
# things CMake 3.25's CPack gets wrong in a -dbgsym package (.ddeb), so that it passes lintian like
# one dh_strip makes:
#  - its md5sums lists each file by its absolute path in CPack's staging directory, so
#    `dpkg --verify` and lintian find none of them: written again, relative to the package root;
#  - it has no /usr/share/doc/<package>: Debian's dbgsym packages carry a symlink to the doc
#    directory of the package they hold the symbols of (which they depend on, same version).
# Each .ddeb is unpacked, fixed and built again with dpkg-deb (owner root:root, gzip as CPack's).

find_program(RADIAL_DPKG_DEB dpkg-deb REQUIRED)

set(_ddebs)
foreach(_file IN LISTS CPACK_PACKAGE_FILES)
  if(_file MATCHES "\\.ddeb$")
    list(APPEND _ddebs "${_file}")
  endif()
endforeach()
if(NOT _ddebs)
  file(GLOB _ddebs "${CPACK_PACKAGE_DIRECTORY}/*.ddeb")
endif()

foreach(_ddeb IN LISTS _ddebs)
  get_filename_component(_name "${_ddeb}" NAME)
  set(_root "${CPACK_PACKAGE_DIRECTORY}/_repack/${_name}")
  file(REMOVE_RECURSE "${_root}")
  file(MAKE_DIRECTORY "${CPACK_PACKAGE_DIRECTORY}/_repack")
  execute_process(COMMAND ${RADIAL_DPKG_DEB} -R "${_ddeb}" "${_root}" RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "repack-dbgsym: dpkg-deb -R '${_ddeb}' failed (${_rc})")
  endif()

  file(STRINGS "${_root}/DEBIAN/control" _package REGEX "^Package: ")
  string(REGEX REPLACE "^Package: " "" _package "${_package}")
  string(REGEX REPLACE "-dbgsym$" "" _main "${_package}")
  if(_main STREQUAL _package)
    message(FATAL_ERROR "repack-dbgsym: '${_ddeb}' is package '${_package}', not a -dbgsym one")
  endif()

  file(GLOB_RECURSE _files LIST_DIRECTORIES false RELATIVE "${_root}" "${_root}/usr/*")
  list(SORT _files)
  set(_md5sums "")
  foreach(_f IN LISTS _files)
    if(NOT IS_SYMLINK "${_root}/${_f}")
      file(MD5 "${_root}/${_f}" _sum)
      string(APPEND _md5sums "${_sum}  ${_f}\n")
    endif()
  endforeach()
  file(WRITE "${_root}/DEBIAN/md5sums" "${_md5sums}")

  file(MAKE_DIRECTORY "${_root}/usr/share/doc")
  file(CREATE_LINK "${_main}" "${_root}/usr/share/doc/${_package}" SYMBOLIC)

  execute_process(COMMAND ${RADIAL_DPKG_DEB} --root-owner-group -Zgzip -b "${_root}" "${_ddeb}"
                  RESULT_VARIABLE _rc OUTPUT_QUIET)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "repack-dbgsym: dpkg-deb -b '${_ddeb}' failed (${_rc})")
  endif()
  file(REMOVE_RECURSE "${_root}")
endforeach()
file(REMOVE_RECURSE "${CPACK_PACKAGE_DIRECTORY}/_repack")

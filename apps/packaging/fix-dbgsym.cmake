# CPACK_POST_BUILD_SCRIPTS: mends the debug package CPack 3.25 makes (pltrun-dbgsym .ddeb),
# which lists its files in md5sums by their staging paths (so `debsums` and lintian find
# none of them) and has no /usr/share/doc entry. Rebuilt with dpkg-deb: md5sums relative to
# the root, and usr/share/doc/pltrun-dbgsym a link to pltrun's (it depends on pltrun), as
# Debian's own -dbgsym packages do.
cmake_minimum_required(VERSION 3.18)
foreach(package IN LISTS CPACK_PACKAGE_FILES)
  if(NOT package MATCHES "\\.ddeb$")
    continue()
  endif()
  set(tree ${package}.tree)
  file(REMOVE_RECURSE ${tree})
  execute_process(COMMAND dpkg-deb --raw-extract ${package} ${tree} RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "dpkg-deb --raw-extract ${package} failed")
  endif()
  # "<md5>  /staging/.../runtime-dbgsym/usr/lib/debug/..." -> "<md5>  usr/lib/debug/..."
  file(READ ${tree}/DEBIAN/md5sums sums)
  string(REGEX REPLACE "  [^\n]*-dbgsym/usr/" "  usr/" sums "${sums}")
  file(WRITE ${tree}/DEBIAN/md5sums "${sums}")
  file(MAKE_DIRECTORY ${tree}/usr/share/doc)
  file(CREATE_LINK pltrun ${tree}/usr/share/doc/pltrun-dbgsym SYMBOLIC)
  # gzip, as CPack's: xz is far slower over the debug symbols, which are large.
  execute_process(COMMAND dpkg-deb --root-owner-group -Zgzip --build ${tree} ${package}
    RESULT_VARIABLE status OUTPUT_QUIET)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "dpkg-deb --build ${tree} failed")
  endif()
  file(REMOVE_RECURSE ${tree})
endforeach()

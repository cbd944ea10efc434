# CPACK_PRE_BUILD_SCRIPTS: runs in the staging directory before the packages are made.
# Static archives keep no debug information in a package, as Debian's dh_strip does: the
# DWARF of a static library would only be copied into its users' binaries, and a debug
# package can hold only the build ids of linked files. Deterministic: no time stamps.
find_program(strip_program strip)
file(GLOB_RECURSE archives "${CPACK_TEMPORARY_DIRECTORY}/*.a")
foreach(archive IN LISTS archives)
  execute_process(COMMAND ${strip_program} --strip-debug --remove-section=.comment --remove-section=.note
                          --enable-deterministic-archives ${archive}
    RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "strip --strip-debug ${archive} failed")
  endif()
endforeach()

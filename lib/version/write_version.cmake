cmake_minimum_required(VERSION 3.18)  # script mode: the same CMake policies as the project
# Script mode (cmake -P), run at every build by the pltrun_version_stamp target: writes
# OUTPUT from TEMPLATE with the version text, touching OUTPUT only when the text changed.
# In: SOURCE_DIR, GIT_EXECUTABLE (may be empty), COMMIT (a -DPLTRUN_GIT_COMMIT override,
# may be empty), VERSION, TEMPLATE, OUTPUT.
set(commit "${COMMIT}")
if(NOT commit AND GIT_EXECUTABLE)
  # The source must be the top of its own checkout: a tarball unpacked inside some other
  # git repository must not take that repository's commit.
  execute_process(COMMAND ${GIT_EXECUTABLE} -C ${SOURCE_DIR} rev-parse --show-toplevel --short=12 HEAD
    OUTPUT_VARIABLE git_output ERROR_QUIET RESULT_VARIABLE git_status OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(git_status EQUAL 0)
    string(REPLACE "\n" ";" git_lines "${git_output}")
    list(GET git_lines 0 top)
    list(GET git_lines 1 head)
    get_filename_component(top "${top}" REALPATH)  # file(REAL_PATH) needs CMake 3.19
    get_filename_component(source "${SOURCE_DIR}" REALPATH)
    if(top STREQUAL source)
      set(commit "${head}")
    endif()
  endif()
endif()
if(commit)
  set(PLTRUN_VERSION_TEXT "${VERSION} (git ${commit})")
else()
  set(PLTRUN_VERSION_TEXT "${VERSION}")
endif()
configure_file(${TEMPLATE} ${OUTPUT} @ONLY)  # leaves OUTPUT untouched when nothing changed

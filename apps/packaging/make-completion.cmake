cmake_minimum_required(VERSION 3.18)  # script mode: the same CMake policies as the project
# Script mode (cmake -P): bash completion for pltrun, `pltrun status` and pltrun-store,
# with the option lists read from the built programs' --help, so they never drift from
# the code. In: PLTRUN, PLTRUN_STORE, TEMPLATE, OUTPUT.

# The options a --help lists, into <prefix>_FLAGS (all) and <prefix>_VALUE_FLAGS (those
# that take a value), each a space-separated string; <prefix>_LINES: one "a,b,c" per option
# with its aliases, for value_cases below. CLI11 writes an option as "  -x,--name TYPE ...",
# where TYPE (TEXT, INT, FLOAT, ...) follows the names after one space when it takes a value.
function(read_options prefix)
  execute_process(COMMAND ${ARGN} OUTPUT_VARIABLE help RESULT_VARIABLE status)
  if(NOT status EQUAL 0 OR NOT help MATCHES "--help")
    message(FATAL_ERROR "'${ARGN}' failed (${status}): no --help to read the options from")
  endif()
  # One list item per line: the text's own ';' and brackets (which CMake's lists treat
  # specially) are replaced first; the option names never hold them.
  string(REGEX REPLACE "[][;]" "_" help "${help}")
  string(REPLACE "\n" ";" lines "${help}")
  set(flags "")
  set(value_flags "")
  set(groups "")
  foreach(line IN LISTS lines)
    if(NOT line MATCHES "^  (-[^ ]+)( [A-Z][A-Z0-9]*([ :=]|$))?")
      continue()
    endif()
    set(names "${CMAKE_MATCH_1}")
    set(takes_value "${CMAKE_MATCH_2}")
    string(REPLACE "," ";" names "${names}")
    list(APPEND groups "${CMAKE_MATCH_1}")
    list(APPEND flags ${names})
    if(takes_value)
      list(APPEND value_flags ${names})
    endif()
  endforeach()
  list(JOIN flags " " flags)
  list(JOIN value_flags " " value_flags)
  set(${prefix}_FLAGS "${flags}" PARENT_SCOPE)
  set(${prefix}_VALUE_FLAGS "${value_flags}" PARENT_SCOPE)
  set(${prefix}_LINES "${groups}" PARENT_SCOPE)
endfunction()

read_options(PLTRUN ${PLTRUN} --help)
read_options(STATUS ${PLTRUN} status --help)
read_options(STORE ${PLTRUN_STORE} --help)

# What a value can be, for the options where the completion can know: "NAME=WORDS" (one of
# these words) or "NAME=<file>". NAME is any one of the option's names; the case pattern
# takes all of them. An option named here that --help no longer lists fails the build.
set(value_hints
  "--nproc-per-node=auto cpu gpu"
  "--rdzv-backend=static c10d etcd"
  "--redirects=0 1 2 3"
  "--tee=0 1 2 3"
  "--hostfile=<file>"
  "--env-file=<file>"
  "--ssh-identity=<file>"
  "--log-dir=<directory>"
  "--remote-pltrun=<file>"
  "--secret-file=<file>")
set(VALUE_CASES "")
set(all_lines ${PLTRUN_LINES} ${STATUS_LINES} ${STORE_LINES})
list(REMOVE_DUPLICATES all_lines)
foreach(hint IN LISTS value_hints)
  string(REGEX MATCH "^([^=]+)=(.*)$" ignored "${hint}")
  set(name "${CMAKE_MATCH_1}")
  set(words "${CMAKE_MATCH_2}")
  set(pattern "")
  foreach(group IN LISTS all_lines)
    string(REPLACE "," ";" aliases "${group}")
    if(name IN_LIST aliases)
      string(REPLACE "," " | " pattern "${group}")
    endif()
  endforeach()
  if(NOT pattern)
    message(FATAL_ERROR "make-completion: ${name} has a value hint but no --help lists it: update ${CMAKE_CURRENT_LIST_FILE}")
  endif()
  if(words STREQUAL "<file>")
    set(action "_pltrun_files -f \"\$2\"")
  elseif(words STREQUAL "<directory>")
    set(action "_pltrun_files -d \"\$2\"")
  else()
    set(action "COMPREPLY=(\$(compgen -W '${words}' -- \"\$2\"))")
  endif()
  string(APPEND VALUE_CASES "    ${pattern}) ${action} ;;\n")
endforeach()

configure_file(${TEMPLATE} ${OUTPUT} @ONLY)

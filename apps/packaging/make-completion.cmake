cmake_minimum_required(VERSION 3.18)  # script mode: the same CMake policies as the project
# Script mode (cmake -P): bash, zsh and fish completion for pltrun, `pltrun status` and
# pltrun-store, with the option lists read from the built programs' --help, so they never
# drift from the code. In: PLTRUN, PLTRUN_STORE, TEMPLATE_DIR (the pltrun.*-completion.in
# templates), OUTPUT_DIR (share/: writes bash-completion/completions/pltrun,
# zsh/vendor-completions/_pltrun, fish/vendor_completions.d/pltrun.fish).

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
  set(value_groups "")
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
      list(APPEND value_groups "${CMAKE_MATCH_1}")
    endif()
  endforeach()
  list(JOIN flags " " flags)
  list(JOIN value_flags " " value_flags)
  set(${prefix}_FLAGS "${flags}" PARENT_SCOPE)
  set(${prefix}_VALUE_FLAGS "${value_flags}" PARENT_SCOPE)
  set(${prefix}_LINES "${groups}" PARENT_SCOPE)
  set(${prefix}_VALUE_LINES "${value_groups}" PARENT_SCOPE)
endfunction()

read_options(PLTRUN ${PLTRUN} --help)
read_options(STATUS ${PLTRUN} status --help)
read_options(STORE ${PLTRUN_STORE} --help)

# What a value can be, for the options where the completion can know: "NAME=WORDS" (one of
# these words) or "NAME=<file>". NAME is any one of the option's names; the completion takes
# all of them. An option named here that --help no longer lists fails the build.
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
set(all_lines ${PLTRUN_LINES} ${STATUS_LINES} ${STORE_LINES})
list(REMOVE_DUPLICATES all_lines)
# hint_of(GROUP VAR): VAR = the hint's value part for the option whose names are GROUP
# ("-t,--tee"), or empty.
function(hint_of group var)
  string(REPLACE "," ";" aliases "${group}")
  foreach(hint IN LISTS value_hints)
    string(REGEX MATCH "^([^=]+)=(.*)$" ignored "${hint}")
    if(CMAKE_MATCH_1 IN_LIST aliases)
      set(${var} "${CMAKE_MATCH_2}" PARENT_SCOPE)
      return()
    endif()
  endforeach()
  set(${var} "" PARENT_SCOPE)
endfunction()

# bash and zsh: one case branch per hinted option, in each shell's words.
set(VALUE_CASES "")
set(ZSH_VALUE_CASES "")
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
    set(zsh_action "_files")
  elseif(words STREQUAL "<directory>")
    set(action "_pltrun_files -d \"\$2\"")
    set(zsh_action "_files -/")
  else()
    set(action "COMPREPLY=(\$(compgen -W '${words}' -- \"\$2\"))")
    set(zsh_action "compadd -- ${words}")
  endif()
  string(APPEND VALUE_CASES "    ${pattern}) ${action} ;;\n")
  string(REPLACE " " "" zsh_pattern "${pattern}")
  string(APPEND ZSH_VALUE_CASES "    (${zsh_pattern}) ${zsh_action} ;;\n")
endforeach()

# fish: one `complete` line per option of each command, under CONDITION (a function of the
# template's): its names as -s/-l/-o, and for an option that takes a value what that can be.
function(fish_lines command condition lines value_lines var)
  set(text "")
  foreach(group IN LISTS lines)
    string(REPLACE "," ";" aliases "${group}")
    set(names "")
    foreach(alias IN LISTS aliases)
      if(alias MATCHES "^--(.+)$")
        string(APPEND names " -l ${CMAKE_MATCH_1}")
      elseif(alias MATCHES "^-(.)$")
        string(APPEND names " -s ${CMAKE_MATCH_1}")
      elseif(alias MATCHES "^-(.+)$")
        string(APPEND names " -o ${CMAKE_MATCH_1}")
      endif()
    endforeach()
    set(value "")
    if(group IN_LIST value_lines)
      hint_of("${group}" words)
      if(words STREQUAL "<file>")
        set(value " -r -F")
      elseif(words STREQUAL "<directory>")
        set(value " -x -a '(__fish_complete_directories (commandline -ct))'")
      elseif(words)
        set(value " -x -a '${words}'")
      else()
        set(value " -x")  # a number, an address: nothing to offer, and no file names
      endif()
    endif()
    string(APPEND text "complete -c ${command} -n ${condition}${names}${value}\n")
  endforeach()
  set(${var} "${text}" PARENT_SCOPE)
endfunction()
fish_lines(pltrun __pltrun_takes_options "${PLTRUN_LINES}" "${PLTRUN_VALUE_LINES}" FISH_PLTRUN)
fish_lines(pltrun __pltrun_takes_status_options "${STATUS_LINES}" "${STATUS_VALUE_LINES}" FISH_STATUS)
fish_lines(pltrun-store true "${STORE_LINES}" "${STORE_VALUE_LINES}" FISH_STORE)

configure_file(${TEMPLATE_DIR}/pltrun.bash-completion.in ${OUTPUT_DIR}/bash-completion/completions/pltrun @ONLY)
configure_file(${TEMPLATE_DIR}/pltrun.zsh-completion.in ${OUTPUT_DIR}/zsh/vendor-completions/_pltrun @ONLY)
configure_file(${TEMPLATE_DIR}/pltrun.fish-completion.in ${OUTPUT_DIR}/fish/vendor_completions.d/pltrun.fish @ONLY)

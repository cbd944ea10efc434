cmake_minimum_required(VERSION 3.18)  # script mode: the same CMake policies as the project
# Script mode (cmake -P): one man page from a program's --help and --version (help2man),
# gzipped. In: HELP2MAN, PROGRAM, DESCRIPTION (the NAME line), INCLUDE (help2man's extra
# sections), OUTPUT (NAME.1.gz).
set(page ${OUTPUT})
string(REGEX REPLACE "\\.gz$" "" page "${page}")
execute_process(
  COMMAND ${HELP2MAN} --no-info --no-discard-stderr --section 1 --name ${DESCRIPTION} --include ${INCLUDE}
          --output ${page} ${PROGRAM}
  RESULT_VARIABLE status ERROR_VARIABLE error)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "help2man ${PROGRAM} failed (${status}): ${error}")
endif()
# --help's footer continues its paragraphs on indented lines, which help2man reads as an
# indented paragraph (.IP) after the first line: join them back into one paragraph.
file(READ ${page} text)
string(REGEX REPLACE "\n([^.\n][^\n]*)\n\\.IP\n" "\n\\1\n" text "${text}")
file(WRITE ${page} "${text}")
# -n: no name or time stamp in the archive, so an unchanged page gives identical bytes.
execute_process(COMMAND gzip -9nf ${page} RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "gzip ${page} failed")
endif()

#pragma once
// Turns PROGRAM [ARGS...] into the executable and argv a worker is started with, and
// checks up front that the executable exists, so a typo fails once, clearly, with
// status 127, instead of N times inside N workers. Pure: the file system is asked through
// a FileAccessProbe (fileAccessOnDisk, command_line/process_inputs.h; the tests' fakes).

#include <string>
#include <vector>

#include "launcher/plan/file_reader.h"
#include "launcher/plan/launch_config.h"

namespace pltrun {

struct ProgramCommand {
  std::string executable;         ///< absolute or relative path that exists and is executable
  std::vector<std::string> argv;  ///< argv[0] included
};

/// Whether PROGRAM runs under Python: a `.py` (unless --no-python), `-m`, `--run-path`.
bool programRunsUnderPython(const LaunchConfig& config);

/// `.py` runs under `pythonExec` with `-u` (unbuffered, as torchrun does), `-m` runs a
/// module, everything else is executed directly. `path` is the PATH to search for names
/// without a '/'. Throws NotFound when the executable or the .py script is missing or not
/// executable.
ProgramCommand resolveProgramCommand(const LaunchConfig& config, const std::string& pythonExec, const std::string& path,
                                     const FileAccessProbe& files);

/// The full path of `name` along `path` (or `name` itself when it contains a '/') if it is
/// an executable regular file; empty otherwise.
std::string findExecutable(const std::string& name, const std::string& path, const FileAccessProbe& files);

}  // namespace pltrun

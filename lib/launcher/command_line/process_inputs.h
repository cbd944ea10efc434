#pragma once
// What this process takes from outside itself, behind the plan's seams: its environment,
// and the real file system (the FileReader, FileProbe and FileAccessProbe that main()
// hands the command-line parser, and the modes hand the plan's pure functions:
// program_command, exported_variables). The tests hand made-up ones instead.

#include <string>

#include "launcher/plan/file_reader.h"
#include "launcher/plan/worker_env.h"

namespace pltrun {

/// This process's environment.
Environment currentEnvironment();

/// The FileReader of the real file system (what() of its errors: strerror's text).
std::string readFileFromDisk(const std::string& path);

/// The FileReader for what pltrun reads because of where it runs or what it was given (a
/// hostfile, ./.deepspeed_env, an env file, the site config): as readFileFromDisk, but
/// Reason::OthersControl for a file another user could have written (base/file_control.h:
/// not yours or root's, writable by group or others, a symbolic link of another user's, or
/// in a directory another user can swap it in), and CannotOpen for what is not a regular file.
std::string readOwnFileFromDisk(const std::string& path);

/// The FileProbe of the real file system: something is at `path` (stat), or it cannot be
/// told for another reason than its absence (the reader then says why).
bool fileExistsOnDisk(const std::string& path);

/// The FileAccessProbe of the real file system: stat and access(2) for this process.
FileAccess fileAccessOnDisk(const std::string& path);

/// The interpreter a Python program runs under: PYTHON_EXEC when set (and not empty); else, for a pltrun
/// installed in a virtual environment (VENV/bin/pltrun beside VENV/pyvenv.cfg, as pip
/// installs the wheel), that environment's bin/python3, as torchrun runs its own
/// sys.executable; else "python3" (looked up on PATH). pipx's environment is pltrun's own,
/// not the job's: there, too, PATH decides.
std::string pythonInterpreter(const Environment& inherited);

}  // namespace pltrun

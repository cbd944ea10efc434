#pragma once
// pltrun's command line: torchrun's flags in both spellings (--nproc-per-node and
// --nproc_per_node), Lightning's --devices, pltrun's own supervision flags, and PET_*
// environment variables as defaults (Kubeflow sets them).

#include <string>
#include <variant>

#include "launcher/plan/file_reader.h"
#include "launcher/plan/launch_config.h"
#include "launcher/plan/worker_env.h"

namespace pltrun {

/// Asked for help or the version: print `text` to stdout and exit 0.
struct InformationRequest {
  std::string text;
};

/// Parses argv into a LaunchConfig of typed values, each flag parsed once. Everything from
/// PROGRAM on belongs to the program and is never read as a pltrun flag. Pure: the PET_*
/// defaults, Slurm's variables and PLTRUN_SECRET_FILE come from `env`, a --hostfile through
/// `readOwnFile` (main() passes currentEnvironment() and readFileFromDisk). Throws
/// Error(InvalidArgument) with a one-line message for bad input.
/// `exists` probes for the site config before it is read (readFile alone where omitted).
/// `readOwnFile` reads what the command line names or pltrun finds by name (the hostfile, -H's
/// file, the site config): main() passes readOwnFileFromDisk, which refuses a file another
/// user could have written; readFile where omitted (the tests' fakes). Slurm's slurm.conf is
/// read with readFile. The files read, and -H's reading, are in the config's notes.
std::variant<LaunchConfig, InformationRequest> parseCommandLine(int argc, const char* const* argv,
                                                                const Environment& env, const FileReader& readFile,
                                                                const FileProbe& exists = assumeFileExists,
                                                                const FileReader& readOwnFile = nullptr);

}  // namespace pltrun

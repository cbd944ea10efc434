#pragma once
// The spellings users of mpirun and horovodrun type first, read before CLI11 sees the
// command line: their one-dash long options (-hostfile, -host, -machinefile) and mpirun's
// -n, which CLI11 would take apart letter by letter (-hostfile as -h ostfile: the whole
// --help, exit 0, nothing run), and Open MPI's own options, refused with one line (pltrun
// is not an MPI launcher). No unknown word is ever read as -h.

#include <optional>
#include <string>

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace pltrun {

/// pltrun's spelling of `arg` (a word before PROGRAM, "=VALUE" kept) where it is another
/// launcher's; nothing where pltrun reads it as it is. Throws InvalidArgument for an
/// MPI-only option and for a one-dash word of several letters that names nothing (status
/// 2, the word named). `app` holds pltrun's options.
std::optional<std::string> pltrunSpelling(const std::string& arg, const CLI::App& app);

/// Whether `option` is followed by a value (--log-dir DIR), not a flag (--standalone).
bool takesValue(const CLI::Option& option);

}  // namespace pltrun

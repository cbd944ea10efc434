#pragma once
// The spellings users of mpirun and horovodrun type first, read before CLI11 sees the
// command line: their one-dash long options (-hostfile, -host, -machinefile) and mpirun's
// -n, which CLI11 would take apart letter by letter (-hostfile as -h ostfile: the whole
// --help, exit 0, nothing run), and Open MPI's own options, refused with one line (pltrun
// is not an MPI launcher). No unknown word is ever read as -h. DeepSpeed's words are
// pltrun's own options (deepspeed_flags.h), except -H, whose meaning depends on its value.

#include <optional>
#include <string>
#include <vector>

#include "launcher/plan/file_reader.h"
#include "launcher/plan/launch_config.h"
#include "pltrun/error.h"

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

/// DeepSpeed's -H names its hostfile, horovodrun's and mpirun's -H the hosts themselves:
/// "--hostfile" (or "--hostfile=FILE") in place of args[at] when its value names a regular
/// file `readOwnFile` reads (yours or root's, writable by no one else), nothing when it is a
/// host list (pltrun's -H, --hosts). Either way `notes` gets one line saying which, and why.
/// A file of that name that another user could have written (FileReadError::OthersControl)
/// is refused: Error(InvalidArgument) naming it and its owner, never read as hosts.
std::optional<std::string> hostfileFromDashH(const std::vector<std::string>& args, size_t at,
                                             const FileReader& readOwnFile, std::vector<LaunchNote>& notes);

/// "unknown option 'WORD'", with pltrun's likely spelling for it (within two edits) or what to
/// do instead of another launcher's word pltrun has no flag for.
Error unknownOption(const std::string& word, const CLI::App& app);

/// Whether `option` is followed by a value (--log-dir DIR), not a flag (--standalone).
bool takesValue(const CLI::Option& option);

}  // namespace pltrun

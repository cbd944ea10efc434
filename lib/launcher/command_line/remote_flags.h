#pragma once
// A job started from one shell on many hosts: --hosts or --hostfile, and the flags that go
// with them (--include/--exclude, -x, --env-file, --ssh-*, --remote-command, ...). Pure: the
// hostfile is read through the FileReader given.

#include "launcher/command_line/raw_flags.h"
#include "launcher/plan/file_reader.h"
#include "launcher/plan/launch_config.h"

namespace pltrun {

/// Sets config.remote (and, for a driver, the c10d rendezvous over the hosts). Throws the
/// one-line Error(InvalidArgument) of the first flag that is wrong, or of a hostfile that
/// cannot be read or parsed, or that another user could have written (`readOwnFile` says
/// so: readOwnFileFromDisk). A hostfile read is named in config.notes.
void applyRemoteFlags(const RawFlags& raw, LaunchConfig& config, const FileReader& readOwnFile);

}  // namespace pltrun

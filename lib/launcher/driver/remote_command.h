#pragma once
// How the driver runs a command on a host: ssh, or the user's --remote-command template
// (pdsh, kubectl exec, docker exec, ...), and how the command must be written for each.

#include <string>
#include <vector>

#include "launcher/plan/launch_config.h"

namespace pltrun {

/// The argv that runs `command` on `host`: ssh (its options, `--`, the host) with the
/// command as one shell-quoted line; or the --remote-command template, split as a shell
/// would, {host} replaced, and the command as one shell-quoted word where it says {cmd},
/// else after it: as one word for ssh, pdsh, rsh and oarsh (a shell on the far side reads
/// it), as separate arguments for any other program (kubectl exec, docker exec run them
/// without a shell).
std::vector<std::string> remoteArgv(const RemoteLaunchSettings& remote, const std::string& host,
                                    const std::vector<std::string>& command);

}  // namespace pltrun

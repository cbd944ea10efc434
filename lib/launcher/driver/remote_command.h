#pragma once
// How the driver runs a command on a host: ssh, or the user's --remote-command template
// (pdsh, kubectl exec, docker exec, ...), and how the command must be written for each.

#include <string>
#include <vector>

#include "launcher/plan/launch_config.h"

namespace pltrun {

/// Whether the driver starts `host`'s agent itself, as a child process on this machine, as
/// mpirun and horovodrun do, rather than over ssh: without a --remote-command (the user's way
/// to every host, whose names only it knows: a pod named localhost), for this machine's own
/// names: localhost, 127.0.0.1, ::1, and `localName` (gethostname) or its first label. Other
/// loopback addresses (127.0.0.2, ...) stay hosts of their own, reached over ssh: an sshd
/// listening there is another machine as far as the job can tell (the tests use them so).
bool startsOnThisMachine(const RemoteLaunchSettings& remote, const std::string& host, const std::string& localName);

/// The argv that runs `command` on `host`: ssh (its options, `--`, the host) with the
/// command as one shell-quoted line; or the --remote-command template, split as a shell
/// would, {host} replaced, and the command as one shell-quoted word where it says {cmd},
/// else after it: as one word for ssh, pdsh, rsh and oarsh (a shell on the far side reads
/// it), as separate arguments for any other program (kubectl exec, docker exec run them
/// without a shell).
std::vector<std::string> remoteArgv(const RemoteLaunchSettings& remote, const std::string& host,
                                    const std::vector<std::string>& command);

/// How the driver runs pltrun on `host`, for its agent and for its health check alike:
/// `sh -c SCRIPT` (agentScript: it exports the variables it reads on its standard input,
/// then execs `pltrun ARGUMENTS`) through remoteArgv, with --remote-pltrun's path (else
/// this binary's); this machine's own hosts (startsOnThisMachine) run /bin/sh here, with
/// this very binary. argv[0] is looked up in `path`: the result's `executable`. Throws
/// Error(NotFound) when it is not there.
struct HostCommand {
  std::string executable;
  std::vector<std::string> argv;
};
HostCommand pltrunOnHost(const RemoteLaunchSettings& remote, const std::string& host, const std::string& localName,
                         const std::string& path, const std::vector<std::string>& arguments);

}  // namespace pltrun

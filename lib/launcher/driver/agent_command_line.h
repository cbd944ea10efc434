#pragma once
// The command line the driver starts each host's pltrun agent with: the job's own flags,
// and a c10d rendezvous at the driver's store. Every value is written by the writer that
// sits beside its parser (endpointText, rendezvousConfText, workerCountText,
// deviceSelectionText, stallTimeoutText), so that the agent's parseCommandLine gives back
// the driver's settings; unit/agent_command_line_test.cc round-trips every flag written here.

#include <cstddef>
#include <string>
#include <vector>

#include "launcher/plan/launch_config.h"

namespace pltrun {

/// The arguments after pltrun's path for the agent on config.remote.hosts[index]: it joins
/// the rendezvous at `endpoint` (endpointText's HOST:PORT) in run `runId`, never as its host,
/// and reads the secret from the user's secret_file or, when the driver made it, from its
/// standard input (agent_stdin.h); then `--`, PROGRAM and its arguments.
std::vector<std::string> agentArguments(const LaunchConfig& config, size_t index, const std::string& endpoint,
                                        const std::string& runId);

/// The job's health flags as every pltrun on a host takes them (its agent, and `pltrun
/// health`): --health-check with its --health-check-timeout when there is a command, and
/// --health-check-interval when it is not the default; nothing for the defaults.
std::vector<std::string> healthCheckArguments(const LaunchConfig& config);

/// `pltrun health --json` with the job's health flags: the check the driver runs on every
/// host before it starts the job (health/node_health.h says what it prints).
std::vector<std::string> healthCommandArguments(const LaunchConfig& config);

}  // namespace pltrun

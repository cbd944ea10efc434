#pragma once
// Before the driver starts a job, every host runs `pltrun health --json` with the job's
// health flags (agent_command_line.h), all at once and the way its agent would be started
// there (remote_command.h: ssh or --remote-command, the forwarded variables on its standard
// input). A host whose checks fail is unhealthy, and so is one where the check cannot run
// at all (ssh refused, no pltrun there, no answer in time), with why: the driver then lists
// every unhealthy host together (unhealthy_hosts.h) rather than failing on the first.

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "launcher/plan/launch_config.h"
#include "launcher/plan/worker_env.h"
#include "launcher/process/captured_commands.h"

namespace pltrun {

/// One host's verdict.
struct HostHealth {
  std::string host;
  bool healthy = false;
  std::string reason;                               ///< one line; empty when healthy
  nlohmann::json checks = nlohmann::json::array();  ///< pltrun health's "checks", when it answered
};

/// Reads `run`, the run of `pltrun health --json` for `host`: its last JSON line (NodeHealth's
/// toJson(), health/node_health.h) and its exit status (0 healthy, 1 not). No verdict, or an
/// exit status that disagrees with it, is unhealthy, with what stderr last said.
/// `overTransport`: it ran through ssh or --remote-command (whose own failure is 255).
HostHealth hostHealthFrom(const std::string& host, const CapturedRun& run, bool overTransport,
                          std::chrono::milliseconds limit);

/// What the checks are started with, as the agents are (remote_launch.cc).
struct HostCheckLaunch {
  const LaunchConfig& config;
  const Environment& forwarded;          ///< on each check's standard input (agent_stdin.h)
  std::vector<std::string> environment;  ///< the driver's own, for ssh or --remote-command
  std::string path;                      ///< where ssh or --remote-command's program is looked up
  std::string localName;                 ///< this machine's name (startsOnThisMachine)
  int guardFd = -1;                      ///< the orphan guard's registration descriptor
};

/// How long the driver waits for every host's answer: the --health-check timeout (when
/// there is a command) and time for the connection and the GPU checks.
std::chrono::milliseconds hostCheckLimit(const LaunchConfig& config);

/// Runs the check on every host of config.remote.hosts at once; their verdicts, in order.
std::vector<HostHealth> checkHostsHealth(const HostCheckLaunch& launch);

}  // namespace pltrun

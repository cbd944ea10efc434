#include "launcher/driver/remote_launch.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>

#include "launcher/command_line/process_inputs.h"
#include "launcher/command_line/rendezvous_flags.h"
#include "launcher/driver/agent_command_line.h"
#include "launcher/driver/agent_stdin.h"
#include "launcher/driver/forwarded_environment.h"
#include "launcher/driver/host_health.h"
#include "launcher/driver/remote_command.h"
#include "launcher/driver/start_progress.h"
#include "launcher/driver/unhealthy_hosts.h"
#include "launcher/group/group_runner.h"
#include "launcher/group/worker_group.h"
#include "launcher/net/host_identity.h"
#include "launcher/net/rendezvous_host.h"
#include "launcher/plan/program_command.h"
#include "launcher/plan/text_parsing.h"
#include "launcher/process/orphan_guard.h"
#include "pltrun/error.h"
#include "rendezvous/store/server/secret_file.h"
#include "rendezvous/store/store_auth.h"

namespace pltrun {

namespace {

constexpr std::chrono::seconds kStopDelayAfterFailure{10};
// ssh's exit status for its own errors (no connection, refused key), never the remote command's.
constexpr int kSshFailed = 255;

bool isLoopbackHost(const std::string& host) { return host == "localhost" || isLoopbackAddress(host); }

// Where the hosts reach the driver, never a loopback address handed to another machine:
// the address towards the first host that is not this machine (any, when all are).
std::string driverAddress(const RemoteLaunchSettings& remote, const std::string& localName) {
  if (!remote.networkInterface.empty()) {
    std::string address = interfaceAddress(remote.networkInterface);
    if (address.empty()) {
      throw Error(ErrorCode::InvalidArgument, "--network-interface " + remote.networkInterface +
                                                  ": no such interface with an address here (see `ip addr`)");
    }
    return address;
  }
  const auto elsewhere = std::find_if(remote.hosts.begin(), remote.hosts.end(), [&](const HostSlots& host) {
    return !startsOnThisMachine(remote, host.host, localName);
  });
  const std::string& first = elsewhere == remote.hosts.end() ? remote.hosts.front().host : elsewhere->host;
  std::string address = localAddressTowards(first, remote.sshPort.value_or(22));
  if (address.empty()) {
    throw Error(ErrorCode::Network,
                "no route from here to " + first + "; check the host name, or pass --network-interface");
  }
  for (const HostSlots& host : remote.hosts) {
    if (isLoopbackAddress(address) && !isLoopbackHost(host.host) &&
        !startsOnThisMachine(remote, host.host, localName)) {
      throw Error(ErrorCode::InvalidArgument, "the address that reaches " + first + " is loopback (" + address +
                                                  "), which " + host.host +
                                                  " cannot use; pass --network-interface with the interface the "
                                                  "hosts reach this machine on");
    }
  }
  return address;
}

// The user's secret when one is given (every host reads the same file); otherwise a new one
// for this job alone, which the driver hands to each agent over its standard input.
std::string jobSecret(const RendezvousSettings& settings) {
  if (!driverMakesSecret(settings)) return rdzv::readSecretFile(settings.secretFile, "secret_file");
  return rdzv::toHex(rdzv::randomBytes(32));
}

// The driver's own client of the store it hosts (start_progress.h reads the joins there).
TcpStoreOptions driverStoreClient(const rdzv::StoreServerOptions& server, int port) {
  TcpStoreOptions client;
  client.host = server.host;
  client.port = port;
  client.secret = server.secret;
  client.authContext = server.context;
  return client;
}

}  // namespace

namespace {

// What every host's agent is started with.
struct AgentLaunch {
  const LaunchConfig& config;
  Environment forwarded;                 ///< -x and --env-file variables, set on the host
  std::vector<std::string> environment;  ///< the driver's own, for ssh or --remote-command
  std::string path;                      ///< where ssh or --remote-command's program is looked up
  std::string localName;                 ///< this machine's name: its hosts' agents start here (startsOnThisMachine)
  std::string endpoint;                  ///< the driver's store, as --rdzv-endpoint
  std::string runId;
  std::string secret;
};

// The agent of host `index`, as one "worker" of the driver's group: ssh (or the
// --remote-command) running `sh -c SCRIPT` on the host, SCRIPT setting the forwarded
// variables from stdin and exec'ing `pltrun AGENT-FLAGS PROGRAM`.
WorkerSpec agentSpec(const AgentLaunch& launch, size_t index) {
  const LaunchConfig& config = launch.config;
  const HostSlots& host = config.remote.hosts[index];
  HostCommand command = pltrunOnHost(config.remote, host.host, launch.localName, launch.path,
                                     agentArguments(config, index, launch.endpoint, launch.runId));

  WorkerSpec spec;
  spec.rank = static_cast<int>(index);
  spec.localRank = static_cast<int>(index);
  spec.label = "host " + host.host;
  spec.consolePrefix = config.prefixOutput ? "[" + host.host + "] " : "";
  spec.stdoutRoute.toConsole = true;
  spec.stderrRoute.toConsole = true;
  spec.stderrRoute.consoleIsStderr = true;
  spec.launch.executable = std::move(command.executable);
  spec.launch.argv = std::move(command.argv);
  spec.launch.environment = launch.environment;
  // ssh passes it on to the agent's standard input: the forwarded variables, an empty
  // line, then the job's secret for pltrun (secret_file=-, see agentArguments).
  spec.launch.standardInput = agentStandardInput(launch.forwarded, config.rdzv, launch.secret);
  return spec;
}

// The agents ran: the driver's exit status is the job's, and a failure names its host.
int driverStatus(const GroupOutcome& outcome, const RemoteLaunchSettings& remote, const std::string& localName) {
  if (outcome.kind == GroupOutcome::Kind::Interrupted) {
    spdlog::warn("stopped by {}", signalName(outcome.interruptSignal));
    return 128 + outcome.interruptSignal;
  }
  if (outcome.kind == GroupOutcome::Kind::Failed) {
    const WorkerFailure& root = *outcome.rootCause;
    const bool overSsh = !startsOnThisMachine(remote, remote.hosts[root.rank].host, localName);
    if (overSsh && root.end.exitCode == kSshFailed && root.end.signal == 0) {
      // ssh's own status: the agent never ran there, so no host report follows.
      spdlog::error(
          "the job failed: the agent on {} could not be started (exit status 255: ssh's or the remote "
          "command's own error, above); check that `ssh {} true` works without a password, or give "
          "--remote-command",
          remote.hosts[root.rank].host, remote.hosts[root.rank].host);
    } else {
      spdlog::error("the job failed: the agent on {} ended first, with {} (the failing host's report is above)",
                    remote.hosts[root.rank].host, root.end.describe());
    }
    return root.end.shellStatus();
  }
  spdlog::info("{} finished", remote.hosts.size() == 1
                                  ? "the host"
                                  : "all " + countedNoun(static_cast<long long>(remote.hosts.size()), "host"));
  return 0;
}

}  // namespace

int runDriver(const LaunchConfig& config, const Environment& inherited) {
  const RemoteLaunchSettings& remote = config.remote;
  Environment forwarded = forwardedEnvironment(inherited, remote);  // a bad --env-file fails before anything starts
  const std::string runId = config.runId.empty() ? randomHexId() : config.runId;
  const std::string localName = localHostName();
  const std::string address = driverAddress(remote, localName);
  OrphanGuard guard;  // before any thread or process exists
  // Every host's health before anything starts; all the unhealthy ones are named at once.
  const std::vector<std::string> environment = environmentEntries(inherited);
  const std::string path = inherited.count("PATH") ? inherited.at("PATH") : "";
  const std::vector<HostHealth> health =
      checkHostsHealth(HostCheckLaunch{config, forwarded, environment, path, localName, guard.registrationFd()});
  if (const int status = refuseUnhealthyHosts(config, runId, health); status != 0) return status;
  rdzv::StoreServerOptions storeOptions;
  storeOptions.host = address;
  storeOptions.port = 0;
  storeOptions.secret = jobSecret(config.rdzv);
  storeOptions.context = runId;
  rdzv::raiseOpenFileLimit();
  storeOptions.descriptorBudget = rdzv::openFileLimitShare(1, 2);  // the rest: one ssh per host
  HostedStore store(storeOptions);
  const std::string endpoint = endpointText(Endpoint{address, store.port()});
  spdlog::info("run {}: {}, rendezvous store on {}; starting one agent per host", runId,
               countedNoun(static_cast<long long>(remote.hosts.size()), "host"), endpoint);

  AgentLaunch launch{config, std::move(forwarded), environment, path, localName, endpoint, runId, storeOptions.secret};
  std::vector<WorkerSpec> specs;
  for (size_t index = 0; index < remote.hosts.size(); ++index) specs.push_back(agentSpec(launch, index));
  for (const HostSlots& host : remote.hosts) {
    if (startsOnThisMachine(remote, host.host, localName)) {
      spdlog::info("host {} is this machine: its agent starts here, not over ssh", host.host);
    }
  }

  boost::asio::io_context context;
  GroupRunner runner(context);
  GroupSettings settings;
  settings.termTimeout = config.termTimeout;
  // A failed job ends every agent by itself within moments (and the failing one prints its
  // report); only a host that stays up after that, or lost its connection, is stopped.
  settings.stopDelayAfterFailure = kStopDelayAfterFailure;
  WorkerGroup group(context, runner.console(), guard, settings);
  runner.listen();
  AgentStartProgress progress(context, driverStoreClient(storeOptions, store.port()), runId, remote.hosts,
                              config.rdzv.joinTimeout);
  progress.start();
  const GroupOutcome outcome = runner.run(group, specs);
  progress.stop();
  return driverStatus(outcome, remote, localName);
}

}  // namespace pltrun

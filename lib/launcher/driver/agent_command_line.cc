#include "launcher/driver/agent_command_line.h"

#include "launcher/command_line/flag_names.h"
#include "launcher/command_line/rendezvous_flags.h"
#include "launcher/driver/agent_stdin.h"
#include "launcher/plan/text_parsing.h"

// Every flag is written by the name flag_declarations.cc declares it with.
using namespace pltrun::flag_name;

namespace pltrun {
namespace {

// The hosts by the names the driver was given, so that an agent that never starts is named
// in the others' waiting lines (host names hold no ',', '=' or brackets: parseHostList
// refuses them). Past kLongestHostList the names are left out, counts only: the whole agent
// command is one argument of sh -c, which Linux caps at 128 KiB.
constexpr size_t kLongestHostList = 64 * 1024;

// The rendezvous of the agent on `self`: the driver's times (rendezvousConfText writes only
// the c10d keys), never the store's host, the secret from the user's file or from standard
// input ("-": the driver made it), and this job's host names, not any the driver was given.
RendezvousSettings agentRendezvous(const RendezvousSettings& driver, const std::vector<HostSlots>& hosts,
                                   const HostSlots& self) {
  RendezvousSettings agent = driver;
  agent.isHost = false;
  agent.secretFile = driverMakesSecret(driver) ? "-" : driver.secretFile;
  agent.nodeName.clear();
  agent.expectedHosts.clear();
  std::vector<std::string> hostNames;
  for (const HostSlots& host : hosts) hostNames.push_back(host.host);
  if (joinText(hostNames, ",").size() <= kLongestHostList) {
    agent.nodeName = self.host;
    agent.expectedHosts = std::move(hostNames);
  }
  return agent;
}

// How many workers the host runs: its --include GPUs, its slots, else the job's own choice.
void addWorkerFlags(const LaunchConfig& config, const HostSlots& host, std::vector<std::string>& args) {
  if (!host.devices.empty()) {
    args.insert(args.end(), {longFlag(kDevices), deviceSelectionText(listedDevices(host.devices))});
  } else if (host.slots > 0) {
    args.insert(args.end(), {longFlag(kNprocPerNode), std::to_string(host.slots)});
  } else if (config.nprocPerNode) {
    args.insert(args.end(), {longFlag(kNprocPerNode), workerCountText(*config.nprocPerNode)});
  } else if (config.devices) {
    args.insert(args.end(), {longFlag(kDevices), deviceSelectionText(*config.devices)});
  }
  // Each agent chooses among its own host's free GPUs.
  if (config.autoSelectGpus) args.push_back(longFlag(kAutoSelectGpus));
}

// The output, supervision and program flags, then `--` and the program.
void addJobFlags(const LaunchConfig& config, std::vector<std::string>& args) {
  if (config.logDir) args.insert(args.end(), {longFlag(kLogDir), *config.logDir});
  if (!config.prefixOutput) args.push_back(longFlag(kNoPrefix));
  if (config.quiet) args.push_back(longFlag(kQuiet));
  if (config.verbose) args.push_back(longFlag(kVerbose));
  if (config.localRankArgument) args.push_back(longFlag(kPassLocalRank));
  if (!config.agentStore) args.push_back(longFlag(kNoAgentStore));
  if (config.programKind == ProgramKind::Module) args.push_back(longFlag(kModule));
  if (config.programKind == ProgramKind::NoPython) args.push_back(longFlag(kNoPython));
  if (config.programKind == ProgramKind::Script) args.push_back(longFlag(kRunPath));
  if (!config.preload.empty()) args.insert(args.end(), {longFlag(kPreload), joinText(config.preload, ",")});
  // Each agent serves its own node's metrics at the address and port the job gave.
  if (config.metrics) args.insert(args.end(), {longFlag(kMetrics), endpointText(*config.metrics)});
  args.push_back("--");
  args.push_back(config.program);
  args.insert(args.end(), config.programArgs.begin(), config.programArgs.end());
}

// --health-check and its timeout, when the job has one (`pltrun health` takes only these).
std::vector<std::string> siteCheckArguments(const LaunchConfig& config) {
  if (config.healthCheck.empty()) return {};
  return {longFlag(kHealthCheck), config.healthCheck, longFlag(kHealthCheckTimeout),
          secondsFlagText(config.healthCheckTimeout)};
}

}  // namespace

std::vector<std::string> agentArguments(const LaunchConfig& config, size_t index, const std::string& endpoint,
                                        const std::string& runId) {
  const HostSlots& host = config.remote.hosts[index];
  std::vector<std::string> args = {longFlag(kExitWithParent),
                                   longFlag(kNnodes),
                                   std::to_string(config.remote.hosts.size()),
                                   longFlag(kNodeRank),
                                   std::to_string(index),
                                   longFlag(kRdzvBackend),
                                   "c10d",
                                   longFlag(kRdzvEndpoint),
                                   endpoint,
                                   longFlag(kRdzvId),
                                   runId,
                                   longFlag(kMaxRestarts),
                                   std::to_string(config.maxRestarts),
                                   longFlag(kMaxNoProgressRestarts),
                                   std::to_string(config.maxNoProgressRestarts),
                                   longFlag(kTermTimeout),
                                   secondsFlagText(config.termTimeout),
                                   longFlag(kRole),
                                   config.role};
  if (config.stallTimeout) args.insert(args.end(), {longFlag(kStallTimeout), stallTimeoutText(*config.stallTimeout)});
  // The user's secret file, at the same path on every host (as pltrun itself is), or "-":
  // the secret the driver made comes on the agent's standard input. Never in argv.
  args.insert(args.end(),
              {longFlag(kRdzvConf), rendezvousConfText(agentRendezvous(config.rdzv, config.remote.hosts, host))});
  const std::vector<std::string> health = healthCheckArguments(config);
  args.insert(args.end(), health.begin(), health.end());
  addWorkerFlags(config, host, args);
  addJobFlags(config, args);
  return args;
}

std::vector<std::string> healthCheckArguments(const LaunchConfig& config) {
  std::vector<std::string> args = siteCheckArguments(config);
  if (config.healthCheckInterval != LaunchConfig().healthCheckInterval) {
    args.insert(args.end(), {longFlag(kHealthCheckInterval), secondsFlagText(config.healthCheckInterval)});
  }
  return args;
}

std::vector<std::string> healthCommandArguments(const LaunchConfig& config) {
  std::vector<std::string> args = {"health", "--json"};
  for (std::string& arg : siteCheckArguments(config)) args.push_back(std::move(arg));
  return args;
}

}  // namespace pltrun

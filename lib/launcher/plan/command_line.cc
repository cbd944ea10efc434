#include "launcher/plan/command_line.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdlib>

#include "launcher/plan/rendezvous_flags.h"
#include "launcher/plan/slurm.h"
#include "launcher/plan/text_parsing.h"
#include "launcher/plan/worker_layout.h"
#include "pltrun/error.h"

namespace pltrun {
namespace {

constexpr const char* kVersion = "pltrun " PLTRUN_VERSION;  // PLTRUN_VERSION: CMake's project()

// The raw text of every valued flag; validated after CLI11 has split the command line, so
// each error names the flag, the value and what is accepted, in our words.
struct RawFlags {
  std::string nprocPerNode, devices, nnodes, nodeRank, masterAddr, masterPort, maxRestarts;
  std::string runId, role, logDir, redirects, tee, localRanksFilter, termTimeout;
  std::string rdzvBackend, rdzvEndpoint, rdzvConf, localAddr, monitorInterval, startMethod;
  bool standalone = false, module = false, noPython = false, noPrefix = false, quiet = false, noAgentStore = false;
  // Many hosts from one shell.
  std::string hosts, hostfile, include, exclude, sshPort, sshIdentity, remoteCommand, envFile, networkInterface;
  std::string remotePltrun;
  std::vector<std::string> exports;
  bool exitWithParent = false;
};

// How a flag is spelled: "--long-name" and "--long_name" (torchrun accepts both), an
// optional short name, and PET_LONG_NAME, the environment variable Kubeflow sets for it.
struct FlagSpelling {
  std::string names;
  std::string environmentVariable;
};

FlagSpelling spell(const std::string& dashed, const std::string& shortName) {
  std::string underscored = dashed;
  std::replace(underscored.begin(), underscored.end(), '-', '_');
  FlagSpelling spelling;
  spelling.names = (shortName.empty() ? "" : shortName + ",") + "--" + dashed;
  if (underscored != dashed) spelling.names += ",--" + underscored;
  spelling.environmentVariable = "PET_" + underscored;
  std::transform(spelling.environmentVariable.begin(), spelling.environmentVariable.end(),
                 spelling.environmentVariable.begin(), ::toupper);
  return spelling;
}

CLI::Option* addValued(CLI::App& app, const std::string& dashed, std::string& target, const std::string& help,
                       const std::string& shortName = "") {
  FlagSpelling spelling = spell(dashed, shortName);
  return app.add_option(spelling.names, target, help)->envname(spelling.environmentVariable);
}

CLI::Option* addFlag(CLI::App& app, const std::string& dashed, bool& target, const std::string& help,
                     const std::string& shortName = "") {
  FlagSpelling spelling = spell(dashed, shortName);
  return app.add_flag(spelling.names, target, help)->envname(spelling.environmentVariable);
}

long long integerIn(const std::string& flag, const std::string& value, long long low, long long high,
                    const std::string& accepted) {
  auto number = parseInteger(trimSpaces(value));
  if (!number || *number < low || *number > high) throwInvalidFlag(flag, value, accepted);
  return *number;
}

std::chrono::milliseconds secondsFlag(const std::string& flag, const std::string& value) {
  auto duration = parseSeconds(value);
  if (!duration) throwInvalidFlag(flag, value, "expected a number of seconds like 30 or 0.5");
  return *duration;
}

// Without --rdzv-backend the rendezvous is static, as torchrun's, unless the job can only
// be elastic: a node-count range, or an endpoint to meet at on several nodes.
RendezvousBackend chooseBackend(const RawFlags& raw, const RendezvousSettings& rdzv) {
  if (!raw.rdzvBackend.empty()) return parseRendezvousBackend("--rdzv-backend", raw.rdzvBackend);
  const bool elastic = rdzv.minNodes < rdzv.maxNodes;
  const bool meets = !raw.rdzvEndpoint.empty() && rdzv.maxNodes > 1;
  return elastic || meets ? RendezvousBackend::C10d : RendezvousBackend::Static;
}

// --rdzv-endpoint. On one node there is nobody to meet (torch's documented single-node form
// is "--rdzv-backend=c10d --rdzv-endpoint=localhost:0"): checked, stored, unused. With an
// explicit static backend on several nodes it is rank 0's store, as torchrun reads it: it
// replaces --master-addr and --master-port.
void applyEndpoint(const RawFlags& raw, LaunchConfig& config) {
  RendezvousSettings& rdzv = config.rdzv;
  const bool multiNode = rdzv.maxNodes > 1;
  if (raw.rdzvEndpoint.empty()) {
    if (!multiNode || rdzv.backend != RendezvousBackend::C10d) return;
    if (!raw.rdzvBackend.empty()) {
      throw Error(ErrorCode::InvalidArgument,
                  "--rdzv-backend c10d with several nodes needs --rdzv-endpoint HOST[:PORT], the same on every node");
    }
    throw Error(ErrorCode::InvalidArgument,
                "--nnodes " + raw.nnodes +
                    ": a node-count range uses the c10d rendezvous, which needs --rdzv-endpoint HOST[:PORT], the "
                    "same on every node");
  }
  if (multiNode && rdzv.backend == RendezvousBackend::Static) {
    Endpoint endpoint = parseEndpoint("--rdzv-endpoint", raw.rdzvEndpoint, -1);
    if (endpoint.port < 0) {
      throwInvalidFlag("--rdzv-endpoint", raw.rdzvEndpoint,
                       "a static rendezvous needs HOST:PORT, rank 0's node and a fixed port");
    }
    config.masterAddr = endpoint.host;
    if (endpoint.port == 0) {
      config.masterPort.reset();  // refused below: the other nodes could not know the port
    } else {
      config.masterPort = endpoint.port;
    }
    return;
  }
  Endpoint endpoint = parseEndpoint("--rdzv-endpoint", raw.rdzvEndpoint, kDefaultRendezvousPort);
  rdzv.endpointHost = endpoint.host;
  rdzv.endpointPort = endpoint.port;
}

void applyNodeFlags(const RawFlags& raw, LaunchConfig& config) {
  RendezvousSettings& rdzv = config.rdzv;
  if (!raw.nnodes.empty()) {
    NodeRange range = parseNodeRange("--nnodes", raw.nnodes);
    rdzv.minNodes = range.minNodes;
    rdzv.maxNodes = range.maxNodes;
  }
  config.nnodes = rdzv.maxNodes;  // static: the fixed count; c10d: the most the job can have
  if (raw.standalone && rdzv.maxNodes != 1) {
    throwInvalidFlag("--nnodes", raw.nnodes, "--standalone runs exactly one node");
  }
  rdzv.backend = chooseBackend(raw, rdzv);
  if (rdzv.backend == RendezvousBackend::Static && rdzv.minNodes < rdzv.maxNodes) {
    throwInvalidFlag("--nnodes", raw.nnodes,
                     "a static rendezvous needs a fixed node count; use --rdzv-backend c10d --rdzv-endpoint "
                     "HOST[:PORT]");
  }
  const bool multiNodeC10d = rdzv.backend == RendezvousBackend::C10d && rdzv.maxNodes > 1;

  // --master-addr and --master-port belong to the static rendezvous; with c10d they are
  // checked and kept, and unused, as torchrun ignores them (the rendezvous decides).
  if (!raw.masterAddr.empty()) config.masterAddr = raw.masterAddr;
  if (!raw.masterPort.empty()) {
    int port = static_cast<int>(
        integerIn("--master-port", raw.masterPort, 0, 65535, "expected a TCP port 1..65535, or 0 to pick a free one"));
    if (port != 0) config.masterPort = port;
  }
  applyEndpoint(raw, config);
  if (!raw.rdzvConf.empty()) applyRendezvousConf(raw.rdzvConf, rdzv);
  if (rdzv.secretFile.empty()) {
    const char* fromEnvironment = std::getenv("PLTRUN_SECRET_FILE");
    if (fromEnvironment != nullptr) rdzv.secretFile = fromEnvironment;
  }
  if (!raw.localAddr.empty()) rdzv.localAddr = raw.localAddr;

  if (!raw.nodeRank.empty()) {
    const int last = config.nnodes - 1;
    if (multiNodeC10d) {
      // torchrun ignores --node-rank with c10d; pltrun keeps it as a preference.
      rdzv.nodeRankHint = static_cast<int>(
          integerIn("--node-rank", raw.nodeRank, 0, last,
                    "expected 0.." + std::to_string(last) + " (one less than the largest --nnodes); a hint with c10d"));
    } else {
      config.nodeRank = static_cast<int>(integerIn(
          "--node-rank", raw.nodeRank, 0, last, "expected 0.." + std::to_string(last) + " (one less than --nnodes)"));
    }
  }
  if (raw.standalone) {
    config.standalone = true;
    config.masterAddr = "127.0.0.1";
    config.masterPort.reset();
  }
  if (config.nnodes > 1 && rdzv.backend == RendezvousBackend::Static && !config.masterPort) {
    throw Error(ErrorCode::InvalidArgument,
                "--nnodes " + std::to_string(config.nnodes) +
                    ": a multi-node static job needs --master-addr and --master-port, the same on every node (or "
                    "--rdzv-backend c10d --rdzv-endpoint HOST[:PORT])");
  }
}

// Under srun, Slurm's variables stand in for the node flags, unless any is given: the node
// count, this node's rank, the endpoint on the first node (which hosts the store) at a port
// derived from the job id, and the job id as run id.
void applySlurmDefaults(RawFlags& raw, LaunchConfig& config) {
  const bool nodeFlagsGiven = !raw.nnodes.empty() || !raw.rdzvEndpoint.empty() || !raw.masterAddr.empty() ||
                              !raw.masterPort.empty() || !raw.nodeRank.empty() || !raw.rdzvBackend.empty() ||
                              raw.standalone;
  if (nodeFlagsGiven) return;
  std::optional<SlurmJob> job = detectSlurm(currentEnvironment());
  if (!job || job->nnodes < 2) return;
  raw.nnodes = std::to_string(job->nnodes);
  raw.nodeRank = std::to_string(job->nodeRank);
  const std::string& first = job->hosts.front();
  raw.rdzvEndpoint =
      (first.find(':') != std::string::npos ? "[" + first + "]" : first) + ":" + std::to_string(job->port);
  if (raw.runId.empty()) raw.runId = job->jobId;
  config.slurmSummary = job->describe();
}

void applyRemoteFlags(const RawFlags& raw, LaunchConfig& config) {
  config.exitWithParent = raw.exitWithParent;
  RemoteLaunchSettings& remote = config.remote;
  if (!raw.hosts.empty() && !raw.hostfile.empty()) {
    throw Error(ErrorCode::InvalidArgument, "--hosts and --hostfile exclude each other; give one");
  }
  std::vector<HostSlots> hosts;
  if (!raw.hosts.empty()) hosts = parseHostList(raw.hosts);
  if (!raw.hostfile.empty()) hosts = readHostfile(raw.hostfile);
  const bool driver = !hosts.empty();
  if (!driver) {
    if (!raw.include.empty() || !raw.exclude.empty() || !raw.exports.empty() || !raw.envFile.empty() ||
        !raw.sshPort.empty() || !raw.sshIdentity.empty() || !raw.remoteCommand.empty()) {
      throw Error(ErrorCode::InvalidArgument,
                  "--include, --exclude, -x, --env-file and the --ssh-* / --remote-command flags go with --hosts or "
                  "--hostfile");
    }
    return;
  }
  if (!raw.nnodes.empty() || !raw.rdzvEndpoint.empty() || !raw.nodeRank.empty() || !raw.masterAddr.empty()) {
    throw Error(ErrorCode::InvalidArgument,
                "with --hosts/--hostfile pltrun places every node itself; drop --nnodes, --node-rank, "
                "--rdzv-endpoint and --master-addr");
  }
  remote.hosts = selectHosts(std::move(hosts), raw.include, raw.exclude);
  if (remote.hosts.empty()) throw Error(ErrorCode::InvalidArgument, "--include/--exclude left no host to run on");
  if (!raw.sshPort.empty()) {
    remote.sshPort = static_cast<int>(integerIn("--ssh-port", raw.sshPort, 1, 65535, "expected a TCP port 1..65535"));
  }
  remote.sshIdentity = raw.sshIdentity;
  if (!raw.remoteCommand.empty() && raw.remoteCommand.find("{host}") == std::string::npos) {
    throwInvalidFlag("--remote-command", raw.remoteCommand,
                     "expected a command with {host}, e.g. \"ssh -p 2222 {host}\"");
  }
  remote.remoteCommand = raw.remoteCommand;
  for (const std::string& name : raw.exports) {
    const std::string variable = name.substr(0, name.find('='));
    if (variable.empty() ||
        variable.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") !=
            std::string::npos) {
      throwInvalidFlag("-x", name, "expected a variable name, or NAME=VALUE");
    }
    remote.exports.push_back(name);
  }
  if (!raw.envFile.empty()) remote.envFile = raw.envFile;
  remote.networkInterface = raw.networkInterface;
  remote.remotePltrun = raw.remotePltrun;
  // The job spans the hosts: the driver runs the c10d rendezvous for them.
  config.rdzv.backend = RendezvousBackend::C10d;
  config.rdzv.minNodes = config.rdzv.maxNodes = config.nnodes = static_cast<int>(remote.hosts.size());
}

void applyOutputFlags(const RawFlags& raw, LaunchConfig& config) {
  if (!raw.logDir.empty()) config.logDir = raw.logDir;
  if (!raw.redirects.empty()) config.redirects = parseStreamSelection("--redirects", raw.redirects);
  if (!raw.tee.empty()) config.tee = parseStreamSelection("--tee", raw.tee);
  if (!raw.localRanksFilter.empty()) {
    config.localRanksFilter = parseLocalRanksFilter("--local-ranks-filter", raw.localRanksFilter);
  }
  config.prefixOutput = !raw.noPrefix;
  config.quiet = raw.quiet;
}

LaunchConfig buildConfig(RawFlags raw, const std::vector<std::string>& command) {
  LaunchConfig config;
  if (command.empty()) {
    throw Error(ErrorCode::InvalidArgument, "PROGRAM is missing: usage is pltrun [options] PROGRAM [ARGS...]");
  }
  if (command.front().size() > 1 && command.front()[0] == '-') {
    throw Error(ErrorCode::InvalidArgument, "unknown option '" + command.front() + "' (see pltrun --help)");
  }
  config.program = command.front();
  config.programArgs.assign(command.begin() + 1, command.end());
  if (raw.module && raw.noPython) {
    throw Error(ErrorCode::InvalidArgument, "-m/--module and --no-python cannot be used together");
  }
  config.programKind = raw.module ? ProgramKind::Module : raw.noPython ? ProgramKind::NoPython : ProgramKind::Auto;

  if (!raw.nprocPerNode.empty()) {
    checkWorkerCount(raw.nprocPerNode);
    config.nprocPerNode = std::string(trimSpaces(raw.nprocPerNode));  // " 4" is stored as "4"
  }
  if (!raw.devices.empty()) config.devices = raw.devices;
  if (raw.hosts.empty() && raw.hostfile.empty()) applySlurmDefaults(raw, config);
  applyNodeFlags(raw, config);
  applyRemoteFlags(raw, config);
  // The first node of a Slurm job hosts the store, whatever its name resolves to.
  if (config.slurmSummary && !config.rdzv.isHost) config.rdzv.isHost = config.rdzv.nodeRankHint == 0;
  if (!raw.maxRestarts.empty()) {
    config.maxRestarts =
        static_cast<int>(integerIn("--max-restarts", raw.maxRestarts, 0, 1'000'000, "expected a non-negative integer"));
  }
  if (!raw.termTimeout.empty()) config.termTimeout = secondsFlag("--term-timeout", raw.termTimeout);
  if (!raw.monitorInterval.empty()) secondsFlag("--monitor-interval", raw.monitorInterval);
  config.agentStore = !raw.noAgentStore;
  config.runId = raw.runId;
  if (!raw.role.empty()) config.role = raw.role;
  applyOutputFlags(raw, config);
  return config;
}

}  // namespace

std::variant<LaunchConfig, InformationRequest> parseCommandLine(int argc, const char* const* argv) {
  CLI::App app{
      "pltrun: start and supervise the workers of a distributed job.\nUsage: pltrun [options] PROGRAM [ARGS...]",
      "pltrun"};
  app.prefix_command();  // PROGRAM and everything after it belong to the program
  app.set_version_flag("--version", kVersion);
  RawFlags raw;
  addValued(app, "nproc-per-node", raw.nprocPerNode, "workers on this node: N, gpu, cpu or auto (default 1)");
  addValued(app, "devices", raw.devices,
            "Lightning's devices: 3 = first three GPUs, \"1, 3\" = GPUs 1 and 3, -1 = all, 0 = none");
  addValued(app, "nnodes", raw.nnodes,
            "number of nodes: N, or MIN:MAX for an elastic job (c10d rendezvous) (default 1)");
  addValued(app, "node-rank", raw.nodeRank,
            "this node's rank, 0..nnodes-1 (static; default 0); with c10d a hint, 0..MAX-1");
  addValued(app, "master-addr", raw.masterAddr,
            "static: address of the rank-0 node (default 127.0.0.1); ignored with c10d");
  addValued(app, "master-port", raw.masterPort,
            "static: port of rank 0's store (default: a free port); ignored with c10d");
  addValued(app, "max-restarts", raw.maxRestarts, "restarts of the worker group after a failure (default 0)");
  addValued(app, "rdzv-id", raw.runId, "the job's id, the same on every node; TORCHELASTIC_RUN_ID (default: random)");
  addValued(app, "run-id", raw.runId, "same as --rdzv-id");
  addValued(app, "rdzv-backend", raw.rdzvBackend,
            "static (fixed node count; --master-addr/--master-port) or c10d (elastic; nodes meet at --rdzv-endpoint). "
            "Default: static, c10d with --nnodes MIN:MAX or with --rdzv-endpoint on several nodes");
  addValued(app, "rdzv-endpoint", raw.rdzvEndpoint,
            "c10d: HOST[:PORT] where the nodes meet, the same on every node (default port 29400; IPv6 as [ADDR]:PORT); "
            "unused on one node");
  addValued(app, "rdzv-conf", raw.rdzvConf,
            "c10d settings KEY=VALUE,...: join_timeout, last_call_timeout, close_timeout, keep_alive_interval, "
            "read_timeout (seconds), keep_alive_max_attempt, is_host, secret_file (default $PLTRUN_SECRET_FILE)");
  addValued(app, "local-addr", raw.localAddr, "this node's address as the other nodes reach it (default: detected)");
  addValued(app, "role", raw.role, "ROLE_NAME of the workers (default 'default')");
  addValued(app, "log-dir", raw.logDir, "keep every worker's output under DIR/RUN_ID/attempt_N/LOCAL_RANK/");
  addValued(app, "redirects", raw.redirects,
            "streams kept out of the console: 0 none, 1 out, 2 err, 3 both, or 0:1,1:2", "-r");
  addValued(app, "tee", raw.tee, "streams also written to log files (same values as --redirects)", "-t");
  addValued(app, "local-ranks-filter", raw.localRanksFilter, "local ranks whose output reaches the console, e.g. 0,1");
  addValued(app, "term-timeout", raw.termTimeout,
            "seconds between SIGTERM and SIGKILL when stopping workers (default 30)");
  addValued(app, "monitor-interval", raw.monitorInterval,
            "accepted for torchrun compatibility; pltrun reacts to exits at once");
  addValued(app, "start-method", raw.startMethod,
            "accepted for torchrun compatibility; workers are always separate processes");
  addFlag(app, "standalone", raw.standalone, "single-node job on localhost with a free port and a random run id");
  addFlag(app, "module", raw.module, "PROGRAM is a Python module (python -m)", "-m");
  addFlag(app, "no-python", raw.noPython, "execute PROGRAM directly, even if it ends in .py");
  addFlag(app, "no-prefix", raw.noPrefix, "no [rank N] prefix on worker output");
  addFlag(app, "no-agent-store", raw.noAgentStore,
          "rank 0 hosts the workers' TCPStore (torchrun's static behaviour) instead of pltrun");
  addFlag(app, "quiet", raw.quiet, "only warnings and errors from pltrun itself", "-q");
  addValued(app, "hosts", raw.hosts, "run on these hosts from here, over ssh: h1:4,h2:4 (HOST:SLOTS)", "-H");
  addValued(app, "hostfile", raw.hostfile, "hosts from a file: 'host slots=N' or 'host:N' lines, # comments");
  addValued(app, "include", raw.include, "only these hosts/slots (DeepSpeed's form): h1@h2:0,2");
  addValued(app, "exclude", raw.exclude, "all but these hosts/slots (DeepSpeed's form): h1@h2:0,2");
  addValued(app, "ssh-port", raw.sshPort, "the hosts' ssh port");
  addValued(app, "ssh-identity", raw.sshIdentity, "the private key ssh uses");
  addValued(app, "remote-command", raw.remoteCommand,
            "how to run a command on a host, with {host}: 'ssh -F cfg {host}', 'kubectl exec {host} --'");
  app.add_option("-x,--export", raw.exports,
                 "pass this variable (NAME or NAME=VALUE) to the remote workers; repeatable")
      ->allow_extra_args(false)  // one value per -x: what follows may be PROGRAM
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  addValued(app, "env-file", raw.envFile, "KEY=VALUE lines passed to the remote workers");
  addValued(app, "network-interface", raw.networkInterface, "the driver's interface the hosts reach it on");
  addValued(app, "remote-pltrun", raw.remotePltrun, "pltrun's path on the hosts (default: this binary's path)");
  app.add_flag("--exit-with-parent", raw.exitWithParent, "internal: stop when the parent process ends")->group("");

  std::vector<std::string> args(argv + 1, argv + argc);
  std::reverse(args.begin(), args.end());  // CLI11 takes the arguments in reverse order
  try {
    app.parse(args);
  } catch (const CLI::CallForHelp&) {
    return InformationRequest{app.help()};
  } catch (const CLI::CallForVersion&) {
    return InformationRequest{std::string(kVersion) + "\n"};
  } catch (const CLI::ParseError& error) {
    throw Error(ErrorCode::InvalidArgument, std::string(error.what()) + " (see pltrun --help)");
  }
  std::vector<std::string> command = app.remaining();
  if (!command.empty() && command.front() == "--") command.erase(command.begin());  // pltrun -- PROGRAM ...
  return buildConfig(raw, command);
}

}  // namespace pltrun

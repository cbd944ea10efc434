#include "launcher/command_line.h"

#include <CLI/CLI.hpp>
#include <cmath>

#include "pltrun/error.h"
#include "launcher/text_parsing.h"

namespace pltrun {
namespace {

constexpr const char* kVersion = "pltrun 0.1.0";

// The raw text of every valued flag; validated after CLI11 has split the command line, so
// each error names the flag, the value and what is accepted, in our words.
struct RawFlags {
  std::string nprocPerNode, devices, nnodes, nodeRank, masterAddr, masterPort, maxRestarts;
  std::string runId, role, logDir, redirects, tee, localRanksFilter, termTimeout;
  std::string rdzvBackend, rdzvEndpoint, rdzvConf, localAddr, monitorInterval, startMethod;
  bool standalone = false, module = false, noPython = false, noPrefix = false, quiet = false, noAgentStore = false;
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
  // Plain decimal only: strtod alone would also take "0x10", "inf" or "1e3".
  const bool decimal = !value.empty() && value.find_first_not_of("0123456789.") == std::string::npos &&
                       std::count(value.begin(), value.end(), '.') <= 1 && value != ".";
  double seconds = decimal ? std::strtod(value.c_str(), nullptr) : -1;
  if (!decimal || seconds > 1e7) {
    throwInvalidFlag(flag, value, "expected a number of seconds like 30 or 0.5");
  }
  return std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
}

void validateNproc(const std::string& value) {
  if (value == "gpu" || value == "cpu" || value == "auto") return;
  integerIn("--nproc-per-node", value, 1, 4096, "expected a positive integer, gpu, cpu or auto");
}

// "N" or "MIN:MAX". Ranges (elastic jobs) need the c10d rendezvous, which this launcher
// does not run yet; a fixed range like "2:2" is the same as "2".
int parseNnodes(const std::string& value) {
  constexpr const char* kAccepted = "expected a node count like 2 (or MIN:MAX with MIN = MAX)";
  auto parts = splitText(value, ':');
  if (parts.size() > 2) throwInvalidFlag("--nnodes", value, kAccepted);
  auto count = [&](std::string_view part) {
    auto number = parseInteger(trimSpaces(part));
    if (!number || *number < 1 || *number > 100000) throwInvalidFlag("--nnodes", value, kAccepted);
    return *number;
  };
  long long low = count(parts[0]);
  long long high = parts.size() == 2 ? count(parts[1]) : low;
  if (low != high) {
    throwInvalidFlag("--nnodes", value,
                     "elastic ranges need the c10d rendezvous, which is not available yet; give a "
                     "fixed node count");
  }
  return static_cast<int>(low);
}

void applyNodeFlags(const RawFlags& raw, LaunchConfig& config) {
  if (!raw.nnodes.empty()) config.nnodes = parseNnodes(raw.nnodes);
  if (!raw.nodeRank.empty()) {
    config.nodeRank = static_cast<int>(integerIn("--node-rank", raw.nodeRank, 0, config.nnodes - 1,
                                                 "expected 0.." + std::to_string(config.nnodes - 1) +
                                                     " (one less than --nnodes)"));
  }
  if (!raw.masterAddr.empty()) config.masterAddr = raw.masterAddr;
  if (!raw.masterPort.empty()) {
    int port = static_cast<int>(integerIn("--master-port", raw.masterPort, 0, 65535,
                                          "expected a TCP port 1..65535, or 0 to pick a free one"));
    if (port != 0) config.masterPort = port;
  }
  if (!raw.rdzvBackend.empty() && raw.rdzvBackend != "static" && raw.rdzvBackend != "c10d") {
    throwInvalidFlag("--rdzv-backend", raw.rdzvBackend, "expected static or c10d");
  }
  // torch's documented single-node form is "--rdzv-backend=c10d --rdzv-endpoint=localhost:0":
  // on one node there is nobody to meet, so the endpoint is not needed.
  if (!raw.rdzvEndpoint.empty() && config.nnodes > 1) {
    throwInvalidFlag("--rdzv-endpoint", raw.rdzvEndpoint,
                     "multi-node c10d rendezvous is not available yet; use --master-addr and --master-port");
  }
  if (raw.standalone) {
    if (config.nnodes != 1) throwInvalidFlag("--nnodes", raw.nnodes, "--standalone runs exactly one node");
    config.standalone = true;
    config.masterAddr = "127.0.0.1";
    config.masterPort.reset();
  }
  if (config.nnodes > 1 && !config.masterPort) {
    throw Error(ErrorCode::InvalidArgument,
                "--nnodes " + std::to_string(config.nnodes) +
                    ": a multi-node static job needs --master-addr and --master-port, the same on "
                    "every node");
  }
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

LaunchConfig buildConfig(const RawFlags& raw, const std::vector<std::string>& command) {
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
    validateNproc(raw.nprocPerNode);
    config.nprocPerNode = std::string(trimSpaces(raw.nprocPerNode));  // " 4" is stored as "4"
  }
  if (!raw.devices.empty()) config.devices = raw.devices;
  applyNodeFlags(raw, config);
  if (!raw.maxRestarts.empty()) {
    config.maxRestarts = static_cast<int>(
        integerIn("--max-restarts", raw.maxRestarts, 0, 1'000'000, "expected a non-negative integer"));
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
  CLI::App app{"pltrun: start and supervise the workers of a distributed job.\nUsage: pltrun [options] PROGRAM [ARGS...]", "pltrun"};
  app.prefix_command();  // PROGRAM and everything after it belong to the program
  app.set_version_flag("--version", kVersion);
  RawFlags raw;
  addValued(app, "nproc-per-node", raw.nprocPerNode, "workers on this node: N, gpu, cpu or auto (default 1)");
  addValued(app, "devices", raw.devices, "Lightning's devices: 3 = first three GPUs, \"1, 3\" = GPUs 1 and 3, -1 = all, 0 = none");
  addValued(app, "nnodes", raw.nnodes, "number of nodes (default 1)");
  addValued(app, "node-rank", raw.nodeRank, "this node's rank, 0..nnodes-1 (default 0)");
  addValued(app, "master-addr", raw.masterAddr, "address of the rank-0 node (default 127.0.0.1)");
  addValued(app, "master-port", raw.masterPort, "port of rank 0's store (default: a free port)");
  addValued(app, "max-restarts", raw.maxRestarts, "restarts of the worker group after a failure (default 0)");
  addValued(app, "rdzv-id", raw.runId, "the job's id, TORCHELASTIC_RUN_ID (default: random)");
  addValued(app, "run-id", raw.runId, "same as --rdzv-id");
  addValued(app, "rdzv-backend", raw.rdzvBackend, "static or c10d (single node: the same)");
  addValued(app, "rdzv-endpoint", raw.rdzvEndpoint, "accepted for a single node (nothing to meet there)");
  addValued(app, "rdzv-conf", raw.rdzvConf, "accepted for torchrun compatibility; unused on a single node");
  addValued(app, "local-addr", raw.localAddr, "accepted for torchrun compatibility; unused on a single node");
  addValued(app, "role", raw.role, "ROLE_NAME of the workers (default 'default')");
  addValued(app, "log-dir", raw.logDir, "keep every worker's output under DIR/RUN_ID/attempt_N/LOCAL_RANK/");
  addValued(app, "redirects", raw.redirects, "streams kept out of the console: 0 none, 1 out, 2 err, 3 both, or 0:1,1:2", "-r");
  addValued(app, "tee", raw.tee, "streams also written to log files (same values as --redirects)", "-t");
  addValued(app, "local-ranks-filter", raw.localRanksFilter, "local ranks whose output reaches the console, e.g. 0,1");
  addValued(app, "term-timeout", raw.termTimeout, "seconds between SIGTERM and SIGKILL when stopping workers (default 30)");
  addValued(app, "monitor-interval", raw.monitorInterval, "accepted for torchrun compatibility; pltrun reacts to exits at once");
  addValued(app, "start-method", raw.startMethod, "accepted for torchrun compatibility; workers are always separate processes");
  addFlag(app, "standalone", raw.standalone, "single-node job on localhost with a free port and a random run id");
  addFlag(app, "module", raw.module, "PROGRAM is a Python module (python -m)", "-m");
  addFlag(app, "no-python", raw.noPython, "execute PROGRAM directly, even if it ends in .py");
  addFlag(app, "no-prefix", raw.noPrefix, "no [rank N] prefix on worker output");
  addFlag(app, "no-agent-store", raw.noAgentStore,
          "rank 0 hosts the workers' TCPStore (torchrun's static behaviour) instead of pltrun");
  addFlag(app, "quiet", raw.quiet, "only warnings and errors from pltrun itself", "-q");

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

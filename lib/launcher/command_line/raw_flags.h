#pragma once
// The text of every pltrun flag as CLI11 left it (from the command line, else from its PET_*
// variable), before any of it is checked. command_line.cc turns it into a LaunchConfig; the
// files that help it (flag_declarations, node_flags, remote_flags) share this struct.

#include <string>
#include <vector>

namespace pltrun {

// Validated after CLI11 has split the command line, so each error names the flag, the value
// and what is accepted, in our words.
struct RawFlags {
  /// -np / --np: horovodrun's and mpirun's total process count.
  std::string totalProcesses;
  std::string nprocPerNode, devices, nnodes, nodeRank, masterAddr, masterPort, maxRestarts;
  std::string runId, role, logDir, redirects, tee, localRanksFilter, termTimeout, stallTimeout;
  std::string maxNoProgressRestarts;
  std::string maxNodeBlames;  ///< --max-node-blames (issue 46)
  /// --health-check, --health-check-timeout, --health-check-interval (issue 46).
  std::string healthCheck, healthCheckTimeout, healthCheckInterval;
  /// --metrics ADDR:PORT (issue 47), and whether it was given at all (given empty is an error).
  std::string metrics;
  bool metricsGiven = false;
  /// --run-id, --rdzv-id's other name, with a target of its own because the PET_* defaults
  /// are applied after the command line: when it has a value (flag or PET_RUN_ID) it wins,
  /// as it did when CLI11 set one shared target in declaration order.
  std::string runIdAlias;
  std::string rdzvBackend, rdzvEndpoint, rdzvConf, localAddr, monitorInterval, startMethod;
  // torchrun 2.x flags with no pltrun meaning of their own: checked, then refused or accepted.
  std::string eventLogHandler, logsSpecs, numaBinding, signalsToHandle;
  // torchrun 2.14's.
  std::string shutdownTimeout, linePrefixTemplate, duplicateStdoutFilters, duplicateStderrFilters, printCompletion;
  /// --preload MODULES (comma list), and whether it came from the site file.
  std::string preload;
  bool preloadFromSite = false;
  bool virtualLocalRank = false;
  bool autoSelectGpus = false;
  /// --auto-select-gpus came from the site file, not the command line or PET_*.
  bool autoSelectGpusFromSite = false;
  bool standalone = false, module = false, noPython = false, runPath = false, noPrefix = false, quiet = false,
       noAgentStore = false;
  // Many hosts from one shell.
  std::string hosts, hostfile, include, exclude, sshPort, sshIdentity, remoteCommand, envFile, networkInterface;
  std::string remotePltrun;
  std::vector<std::string> exports;
  bool exitWithParent = false;
  // Other launchers' words (deepspeed_flags.h, foreign_spellings.h): DeepSpeed's --num_gpus,
  // --num_nodes, --no_local_rank; horovodrun's --start-timeout and --verbose; mpirun's
  // --oversubscribe and --bind-to.
  std::string numGpus, numNodes, startTimeout, bindTo;
  bool noLocalRank = false, passLocalRank = false, verbose = false, oversubscribe = false;
};

}  // namespace pltrun

#include "launcher/attempt_plan.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>

#include "launcher/free_port.h"

namespace pltrun {
namespace fs = std::filesystem;

namespace {

// Console and log-file routing of one worker's streams, per -r, -t and --local-ranks-filter.
std::pair<OutputRoute, OutputRoute> outputRoutes(const RunPlan& plan, const fs::path& workerDirectory, int localRank) {
  const LaunchConfig& config = plan.config;
  bool shown = !config.localRanksFilter ||
               std::count(config.localRanksFilter->begin(), config.localRanksFilter->end(), localRank) > 0;
  unsigned redirected = config.redirects.forLocalRank(localRank);
  OutputRoute out, err;
  out.toConsole = shown && !(redirected & kStdoutBit);
  err.toConsole = shown && !(redirected & kStderrBit);
  err.consoleIsStderr = true;
  err.keepTail = true;
  if (plan.directory.keepsLogs()) {
    out.logPath = (workerDirectory / "stdout.log").string();
    err.logPath = (workerDirectory / "stderr.log").string();
  }
  return {out, err};
}

WorkerPlacement placementFor(const RunPlan& plan, int attempt) {
  const LaunchConfig& config = plan.config;
  WorkerPlacement placement;
  placement.localWorldSize = plan.layout.workerCount;
  placement.nodeRank = config.nodeRank;
  placement.nnodes = config.nnodes;
  placement.role = config.role;
  placement.masterAddr = config.masterAddr;
  // Without an agent store, a fresh port per attempt when the launcher picks it: the last
  // attempt's store may still hold the old one in TIME_WAIT.
  placement.useAgentStore = plan.agentStorePort != 0;
  placement.masterPort = plan.agentStorePort != 0 ? plan.agentStorePort
                         : config.masterPort      ? *config.masterPort
                                                  : pickFreePort(config.masterAddr);
  placement.restartCount = attempt;
  placement.maxRestarts = config.maxRestarts;
  placement.runId = plan.runId;
  placement.cudaVisibleDevices = plan.layout.cudaVisibleDevices;
  return placement;
}

}  // namespace

std::vector<WorkerSpec> workerSpecsForAttempt(const RunPlan& plan, int attempt) {
  WorkerPlacement placement = placementFor(plan, attempt);
  const int workers = plan.layout.workerCount;
  const int firstRank = plan.config.nodeRank * workers;
  spdlog::info("run {}{}: starting {} workers (ranks {}-{} of {}) on {}, master {}:{}", plan.runId,
               attempt > 0 ? " attempt " + std::to_string(attempt) : "", workers, firstRank, firstRank + workers - 1,
               workers * plan.config.nnodes, plan.host, placement.masterAddr, placement.masterPort);
  std::vector<WorkerSpec> specs;
  for (int localRank = 0; localRank < workers; ++localRank) {
    fs::path workerDirectory = plan.directory.workerDirectory(attempt, localRank);
    placement.localRank = localRank;
    placement.errorFile = (workerDirectory / "error.json").string();
    fs::remove(placement.errorFile);  // never report a previous run's error

    WorkerSpec spec;
    spec.rank = firstRank + localRank;
    spec.localRank = localRank;
    spec.errorFile = placement.errorFile;
    spec.consolePrefix = plan.config.prefixOutput ? "[rank " + std::to_string(spec.rank) + "] " : "";
    std::tie(spec.stdoutRoute, spec.stderrRoute) = outputRoutes(plan, workerDirectory, localRank);
    spec.launch.executable = plan.command.executable;
    spec.launch.argv = plan.command.argv;
    for (const auto& [name, value] : buildWorkerEnv(plan.inherited, placement)) {
      spec.launch.environment.push_back(name + "=" + value);
    }
    specs.push_back(std::move(spec));
  }
  return specs;
}

}  // namespace pltrun

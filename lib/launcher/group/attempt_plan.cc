#include "launcher/group/attempt_plan.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "launcher/plan/line_prefix_template.h"
#include "launcher/plan/text_parsing.h"

namespace pltrun {
namespace {

// The attempt's filtered copies (--duplicate-*-filters), shared by every worker's streams.
struct FilteredCopies {
  std::shared_ptr<FilteredCopy> out, err;
};

FilteredCopies filteredCopiesFor(const RunPlan& plan, int attempt) {
  FilteredCopies copies;
  if (!plan.directory.keepsLogs()) return copies;
  if (!plan.job.config.duplicateStdoutFilters.empty()) {
    copies.out = std::make_shared<FilteredCopy>(plan.directory.attemptFile(attempt, "filtered_stdout.log"),
                                                plan.job.config.duplicateStdoutFilters);
  }
  if (!plan.job.config.duplicateStderrFilters.empty()) {
    copies.err = std::make_shared<FilteredCopy>(plan.directory.attemptFile(attempt, "filtered_stderr.log"),
                                                plan.job.config.duplicateStderrFilters);
  }
  return copies;
}

// Console and log-file routing of one worker's streams, per -r, -t and --local-ranks-filter.
std::pair<OutputRoute, OutputRoute> outputRoutes(const RunPlan& plan, int attempt, int localRank,
                                                 const FilteredCopies& copies) {
  const LaunchConfig& config = plan.job.config;
  bool shown = !config.localRanksFilter ||
               std::count(config.localRanksFilter->begin(), config.localRanksFilter->end(), localRank) > 0;
  // --tee copies a stream to the console as well as its file, even where --redirects sends
  // it to the file alone (torchrun: `--redirects 3 --tee 3` still shows the output).
  const unsigned redirected = config.redirects.forLocalRank(localRank) & ~config.tee.forLocalRank(localRank);
  OutputRoute out, err;
  out.toConsole = shown && !(redirected & kStdoutBit);
  err.toConsole = shown && !(redirected & kStderrBit);
  err.consoleIsStderr = true;
  err.keepTail = true;
  if (plan.directory.keepsLogs()) {
    out.logFile = plan.directory.workerFile(attempt, localRank, "stdout.log");
    err.logFile = plan.directory.workerFile(attempt, localRank, "stderr.log");
  }
  out.filteredCopy = copies.out;
  err.filteredCopy = copies.err;
  return {out, err};
}

// "[rank 3] ", torchrun's TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE where set, none with --no-prefix.
std::string consolePrefix(const LaunchConfig& config, int rank, int localRank) {
  if (!config.prefixOutput) return "";
  if (config.linePrefixTemplate)
    return expandLinePrefixTemplate(*config.linePrefixTemplate, config.role, rank, localRank);
  return "[rank " + std::to_string(rank) + "] ";
}

WorkerPlacement placementFor(const RunPlan& plan, int attempt, const NodePlacement& node) {
  const LaunchConfig& config = plan.job.config;
  WorkerPlacement placement;
  placement.localWorldSize = plan.job.layout.workerCount;
  placement.nodeRank = node.nodeRank;
  placement.nnodes = node.nnodes;
  placement.worldSize = node.worldSize;
  placement.firstRank = node.firstRank;
  placement.role = config.role;
  placement.masterAddr = node.masterAddr;
  placement.useAgentStore = node.useAgentStore;
  placement.masterPort = node.masterPort;
  placement.restartCount = attempt;
  placement.maxRestarts = config.maxRestarts;
  placement.runId = plan.job.runId;
  placement.cudaVisibleDevices = plan.job.layout.cudaVisibleDevices;
  placement.virtualLocalRank = config.virtualLocalRank;
  return placement;
}

// Supervision's variables of one worker (none in unit tests, which have no files).
void addSupervision(WorkerPlacement& placement, const RunPlan& plan, int attempt) {
  placement.timerFile = plan.timerFile;
  if (plan.supervision == nullptr) return;
  placement.heartbeatPath = plan.supervision->heartbeatPath(attempt, placement.localRank);
  placement.stackFile = plan.supervision->stackFile(attempt, placement.localRank);
  placement.stackSignal = plan.supervision->stackSignal();
  placement.pythonHookDirectory = plan.supervision->pythonHookDirectory();
}

}  // namespace

std::optional<ZygoteSettings> zygoteSettingsFor(const RunPlan& plan, int guardFd) {
  if (plan.job.config.preload.empty()) return std::nullopt;
  WorkerPlacement placement = placementFor(plan, 0, NodePlacement{});
  addSupervision(placement, plan, 0);
  ZygoteSettings settings;
  settings.interpreter = plan.job.command.executable;
  settings.workerArgv = plan.job.command.argv;
  settings.preload = plan.job.config.preload;
  settings.environment = environmentEntries(sharedWorkerEnv(plan.job.inherited, placement));
  settings.guardFd = guardFd;
  return settings;
}

NodePlacement staticPlacement(const LaunchConfig& config) {
  NodePlacement node;
  node.nodeRank = config.nodeRank;
  node.nnodes = config.nnodes;
  node.masterAddr = config.masterAddr;
  return node;
}

std::vector<WorkerSpec> workerSpecsFor(const RunPlan& plan, int attempt, const NodePlacement& node) {
  WorkerPlacement placement = placementFor(plan, attempt, node);
  const int workers = plan.job.layout.workerCount;
  const int firstRank = node.firstRank >= 0 ? node.firstRank : node.nodeRank * workers;
  const int worldSize = node.worldSize > 0 ? node.worldSize : workers * node.nnodes;
  spdlog::info("run {}{}: starting {} (ranks {}-{} of {}) on {}, master {}:{}", plan.job.runId,
               attempt > 0 ? " attempt " + std::to_string(attempt) : "", countedNoun(workers, "worker"), firstRank,
               firstRank + workers - 1, worldSize, plan.host, placement.masterAddr, placement.masterPort);
  std::vector<WorkerSpec> specs;
  const FilteredCopies copies = filteredCopiesFor(plan, attempt);
  for (int localRank = 0; localRank < workers; ++localRank) {
    placement.localRank = localRank;
    const RunFile errorFile = plan.directory.errorFile(attempt, localRank);
    errorFile.remove();  // never report a previous run's error
    placement.errorFile = plan.directory.pathForWorkers(errorFile);
    addSupervision(placement, plan, attempt);

    WorkerSpec spec;
    spec.rank = firstRank + localRank;
    spec.localRank = localRank;
    spec.errorFile = errorFile;
    spec.heartbeatPath = placement.heartbeatPath;
    spec.stackFile = placement.stackSignal != 0 ? placement.stackFile : "";
    spec.consolePrefix = consolePrefix(plan.job.config, spec.rank, localRank);
    std::tie(spec.stdoutRoute, spec.stderrRoute) = outputRoutes(plan, attempt, localRank, copies);
    spec.launch.executable = plan.job.command.executable;
    spec.launch.argv = plan.job.command.argv;
    if (plan.job.config.localRankArgument) {
      // DeepSpeed's: before the program's own arguments, after the script (or module) name.
      const auto programArgs = static_cast<std::ptrdiff_t>(plan.job.config.programArgs.size());
      spec.launch.argv.insert(spec.launch.argv.end() - programArgs, "--local_rank=" + std::to_string(localRank));
    }
    if (!plan.job.layout.workerCpus.empty()) spec.launch.cpus = plan.job.layout.workerCpus.at(localRank);
    spec.launch.environment = environmentEntries(buildWorkerEnv(plan.job.inherited, placement));
    specs.push_back(std::move(spec));
  }
  return specs;
}

}  // namespace pltrun

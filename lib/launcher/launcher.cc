#include "launcher/launcher.h"

#include <sched.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <random>

#include "pltrun/error.h"
#include "launcher/free_port.h"
#include "launcher/gpu_inventory.h"
#include "launcher/orphan_guard.h"
#include "launcher/program_command.h"
#include "launcher/supervisor.h"
#include "launcher/worker_env.h"
#include "launcher/worker_layout.h"
#include "rendezvous/store_server.h"

extern char** environ;

namespace pltrun {
namespace fs = std::filesystem;

namespace {

Environment currentEnvironment() {
  Environment env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    std::string_view text(*entry);
    size_t equals = text.find('=');
    if (equals != std::string_view::npos) env.emplace(text.substr(0, equals), text.substr(equals + 1));
  }
  return env;
}

std::optional<std::string> lookup(const Environment& env, const std::string& name) {
  auto found = env.find(name);
  if (found == env.end()) return std::nullopt;
  return found->second;
}

std::string randomRunId() {
  std::random_device device;
  char text[16];
  snprintf(text, sizeof text, "%08x", device());
  return text;
}

int usableCpuCount() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  return online > 0 ? static_cast<int>(online) : 1;
}

std::string hostName() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

fs::path makeTemporaryDirectory(const std::string& stem) {
  const char* base = std::getenv("TMPDIR");
  std::string pattern = std::string(base && *base ? base : "/tmp") + "/" + stem + "-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) {
    throw Error(ErrorCode::System, "cannot create a temporary directory like " + pattern + ": " + strerror(errno));
  }
  return pattern;
}

void createDirectories(const fs::path& path) {
  std::error_code error;
  fs::create_directories(path, error);
  if (error) throw Error(ErrorCode::System, "cannot create directory " + path.string() + ": " + error.message());
}

// Where a run keeps its files: the log tree under --log-dir/RUN_ID when logs are kept,
// otherwise a temporary directory (for error files only) removed when the run ends.
class RunDirectory {
 public:
  RunDirectory(const LaunchConfig& config, const std::string& runId) {
    std::optional<std::string> logDir = config.logDir;
    if (!logDir && (config.redirects.any() || config.tee.any())) {
      logDir = makeTemporaryDirectory("pltrun-logs").string();  // torchrun also logs to a temp dir
    }
    if (logDir) {
      root_ = fs::path(*logDir) / runId;
      keepsLogs_ = true;
      createDirectories(root_);
    } else {
      root_ = makeTemporaryDirectory("pltrun-" + runId);
    }
  }
  ~RunDirectory() {
    std::error_code ignored;
    if (!keepsLogs_) fs::remove_all(root_, ignored);
  }
  bool keepsLogs() const { return keepsLogs_; }
  const fs::path& root() const { return root_; }
  fs::path workerDirectory(int attempt, int localRank) const {
    fs::path path = root_ / ("attempt_" + std::to_string(attempt)) / std::to_string(localRank);
    createDirectories(path);
    return path;
  }

 private:
  fs::path root_;
  bool keepsLogs_ = false;
};

// Console and log-file routing of one worker's streams, per -r, -t and --local-ranks-filter.
std::pair<OutputRoute, OutputRoute> outputRoutes(const LaunchConfig& config, const RunDirectory& directory,
                                                 const fs::path& workerDirectory, int localRank) {
  bool shown = !config.localRanksFilter ||
               std::count(config.localRanksFilter->begin(), config.localRanksFilter->end(), localRank) > 0;
  unsigned redirected = config.redirects.forLocalRank(localRank);
  OutputRoute out, err;
  out.toConsole = shown && !(redirected & kStdoutBit);
  err.toConsole = shown && !(redirected & kStderrBit);
  err.consoleIsStderr = true;
  err.keepTail = true;
  if (directory.keepsLogs()) {
    out.logPath = (workerDirectory / "stdout.log").string();
    err.logPath = (workerDirectory / "stderr.log").string();
  }
  return {out, err};
}

}  // namespace

int runLauncher(const LaunchConfig& config) {
  const Environment inherited = currentEnvironment();
  const ProgramCommand command = resolveProgramCommand(
      config, lookup(inherited, "PYTHON_EXEC").value_or("python3"), lookup(inherited, "PATH").value_or(""));

  std::vector<std::string> gpuIds;
  if (layoutNeedsGpus(config.nprocPerNode, config.devices)) {
    gpuIds = visibleGpuIds(lookup(inherited, "CUDA_VISIBLE_DEVICES"), physicalGpuCount());
  }
  const WorkerLayout layout = resolveWorkerLayout(config.nprocPerNode, config.devices, gpuIds, usableCpuCount());
  const std::string runId = config.runId.empty() ? randomRunId() : config.runId;
  const RunDirectory directory(config, runId);
  const std::string host = hostName();
  OrphanGuard guard;  // before any worker exists

  boost::asio::io_context context;
  // The workers' store, hosted here for the whole run: workers connect to it as clients
  // (each attempt under its own key prefix, as torch does), so none of them opens a port
  // and nothing collides on MASTER_PORT. Static multi-node jobs keep torchrun's way: the
  // store is rank 0's.
  std::unique_ptr<rdzv::StoreServer> agentStore;
  if (config.agentStore && config.nnodes == 1) {
    rdzv::raiseOpenFileLimit();
    rdzv::StoreServerOptions storeOptions;
    storeOptions.host = config.masterAddr;
    storeOptions.port = config.masterPort.value_or(0);
    agentStore = std::make_unique<rdzv::StoreServer>(context, storeOptions);
    agentStore->start();
  }

  if (setsOmpNumThreads(inherited, layout.workerCount)) {
    spdlog::info("OMP_NUM_THREADS=1 for each of the {} workers so they do not overload the CPUs; set it to tune",
                 layout.workerCount);
  }
  if (directory.keepsLogs()) spdlog::info("worker logs go to {}", directory.root().string());

  AttemptPlanner planAttempt = [&](int attempt) {
    WorkerPlacement placement;
    placement.localWorldSize = layout.workerCount;
    placement.nodeRank = config.nodeRank;
    placement.nnodes = config.nnodes;
    placement.role = config.role;
    placement.masterAddr = config.masterAddr;
    // Without an agent store, a fresh port per attempt when the launcher picks it: the
    // last attempt's store may still hold the old one in TIME_WAIT.
    placement.useAgentStore = agentStore != nullptr;
    placement.masterPort = agentStore                 ? agentStore->port()
                           : config.masterPort        ? *config.masterPort
                                                      : pickFreePort(config.masterAddr);
    placement.restartCount = attempt;
    placement.maxRestarts = config.maxRestarts;
    placement.runId = runId;
    placement.cudaVisibleDevices = layout.cudaVisibleDevices;

    const int firstRank = config.nodeRank * layout.workerCount;
    spdlog::info("run {}{}: starting {} workers (ranks {}-{} of {}) on {}, master {}:{}", runId,
                 attempt > 0 ? " attempt " + std::to_string(attempt) : "", layout.workerCount, firstRank,
                 firstRank + layout.workerCount - 1, layout.workerCount * config.nnodes, host,
                 placement.masterAddr, placement.masterPort);
    std::vector<WorkerSpec> specs;
    for (int localRank = 0; localRank < layout.workerCount; ++localRank) {
      fs::path workerDirectory = directory.workerDirectory(attempt, localRank);
      placement.localRank = localRank;
      placement.errorFile = (workerDirectory / "error.json").string();
      fs::remove(placement.errorFile);  // never report a previous run's error

      WorkerSpec spec;
      spec.rank = firstRank + localRank;
      spec.localRank = localRank;
      spec.errorFile = placement.errorFile;
      spec.consolePrefix = config.prefixOutput ? "[rank " + std::to_string(spec.rank) + "] " : "";
      std::tie(spec.stdoutRoute, spec.stderrRoute) = outputRoutes(config, directory, workerDirectory, localRank);
      spec.launch.executable = command.executable;
      spec.launch.argv = command.argv;
      for (const auto& [name, value] : buildWorkerEnv(inherited, placement)) {
        spec.launch.environment.push_back(name + "=" + value);
      }
      specs.push_back(std::move(spec));
    }
    return specs;
  };

  SupervisorOptions options;
  options.maxRestarts = config.maxRestarts;
  options.termTimeout = config.termTimeout;
  options.host = host;
  if (directory.keepsLogs()) options.reportPath = (directory.root() / "failure.json").string();
  return Supervisor(context, options, guard).run(planAttempt);
}

}  // namespace pltrun

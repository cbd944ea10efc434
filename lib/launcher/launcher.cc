#include "launcher/launcher.h"

#include <sched.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <optional>
#include <set>

#include "launcher/agent/elastic_agent.h"
#include "launcher/command_line/torchrun_flags.h"
#include "launcher/driver/remote_launch.h"
#include "launcher/net/host_identity.h"
#include "launcher/placement/gpu_auto_select.h"
#include "launcher/placement/gpu_inventory.h"
#include "launcher/plan/exported_variables.h"
#include "launcher/plan/text_parsing.h"
#include "launcher/static_job/static_job.h"
#include "pltrun/error.h"

namespace pltrun {

namespace {

std::optional<std::string> lookup(const Environment& env, const std::string& name) {
  auto found = env.find(name);
  if (found == env.end()) return std::nullopt;
  return found->second;
}

// The CPUs this process may run on; empty when the kernel will not say.
std::set<int> usableCpus() {
  cpu_set_t set;
  std::set<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.insert(cpu);
  }
  return cpus;
}

int usableCpuCount() {
  if (const std::set<int> cpus = usableCpus(); !cpus.empty()) return static_cast<int>(cpus.size());
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  return online > 0 ? static_cast<int>(online) : 1;
}

// --numa-binding: each local rank's CPUs, near the GPU it uses (the workers' GPU N for
// local rank N), within the CPUs this launcher may use. One line per worker says where.
std::vector<std::vector<int>> numaBindingFor(NumaMode mode, const WorkerLayout& layout, const Environment& inherited) {
  const std::vector<std::string> gpus =
      visibleGpuIds(layout.cudaVisibleDevices ? layout.cudaVisibleDevices : lookup(inherited, "CUDA_VISIBLE_DEVICES"),
                    physicalGpuCount());
  if (static_cast<int>(gpus.size()) < layout.workerCount) {
    throw Error(ErrorCode::InvalidArgument, "--numa-binding binds local rank N near GPU N, but " +
                                                std::to_string(layout.workerCount) + " workers see " +
                                                std::to_string(gpus.size()) + " GPU(s)");
  }
  const std::vector<std::string> addresses = gpuPciAddresses(gpus, lookup(inherited, "CUDA_DEVICE_ORDER"));
  const std::set<int> allowed = usableCpus();
  const SysfsReader sysfs = sysfsUnder(lookup(inherited, "PLTRUN_SYSFS_ROOT").value_or("/sys"));
  std::vector<std::vector<int>> cpus;
  for (int localRank = 0; localRank < layout.workerCount; ++localRank) {
    const std::set<int> chosen = numaCpusForGpu(mode, localRank, addresses, allowed, sysfs);
    spdlog::info("--numa-binding {}: local rank {} (GPU {} on NUMA node {}) runs on CPUs {}", numaModeName(mode),
                 localRank, addresses[localRank], numaNodeOfGpu(addresses[localRank], sysfs), cpuListText(chosen));
    cpus.emplace_back(chosen.begin(), chosen.end());
  }
  return cpus;
}

// mpirun's -x and --env-file on one node: the workers' environment, and what pltrun reads
// about them (the GPUs, PYTHON_EXEC), include them.
Environment withExportedVariables(const Environment& inherited, const RemoteLaunchSettings& settings) {
  Environment environment = inherited;
  if (auto read = addExportedVariables(inherited, settings.exports, settings.envFile, environment)) {
    spdlog::info("{}", *read);
  }
  return environment;
}

// --auto-select-gpus: the free GPUs chosen among `gpuIds`, as the --devices list of them;
// the result holds their locks, so the caller keeps it until the job ends. Too few free:
// the refusal, before anything starts.
std::optional<AutoSelectedGpus> autoSelectedGpus(const LaunchConfig& config, const std::vector<std::string>& gpuIds,
                                                 const Environment& inherited,
                                                 std::optional<DeviceSelection>& devices) {
  if (!config.autoSelectGpus) return std::nullopt;
  AutoSelectedGpus selected = autoSelectGpus(gpusToAutoSelect(config.nprocPerNode, config.devices), gpuIds,
                                             lookup(inherited, "CUDA_DEVICE_ORDER"));
  if (!selected.notice.empty()) spdlog::warn("{}", selected.notice);
  devices = listedDevices(selected.chosen);
  if (config.devices) devices->spelled = config.devices->spelled;  // errors quote the user's own words
  std::vector<std::string> chosen, busy;
  for (int index : selected.chosen) chosen.push_back(gpuIds[static_cast<size_t>(index)]);
  for (const GpuState& gpu : selected.gpus) {
    if (!gpuIsFree(gpu)) busy.push_back(busyGpuText(gpu));
  }
  spdlog::info("--auto-select-gpus: GPU(s) {} chosen, locked for this job{}", joinText(chosen, ", "),
               busy.empty() ? std::string() : "; " + joinText(busy, "; "));
  return selected;
}

int runOnThisNode(const LaunchConfig& config, const Environment& inherited) {
  const ProgramCommand command = resolveProgramCommand(config, lookup(inherited, "PYTHON_EXEC").value_or("python3"),
                                                       lookup(inherited, "PATH").value_or(""));

  std::vector<std::string> gpuIds;
  if (config.autoSelectGpus || layoutNeedsGpus(config.nprocPerNode, config.devices)) {
    gpuIds = visibleGpuIds(lookup(inherited, "CUDA_VISIBLE_DEVICES"), physicalGpuCount());
  }
  std::optional<DeviceSelection> devices = config.devices;
  const std::optional<AutoSelectedGpus> autoSelected = autoSelectedGpus(config, gpuIds, inherited, devices);
  WorkerLayout layout = resolveWorkerLayout(config.nprocPerNode, devices, gpuIds, usableCpuCount());
  if (config.numaBinding) layout.workerCpus = numaBindingFor(*config.numaBinding, layout, inherited);
  // torchrun's default id is "none" on every node; pltrun keeps a random one where it can
  // (one node: each run's logs apart), but the nodes of a static job must agree without
  // being told: "none", as torchrun's.
  const std::string runId = !config.runId.empty() ? config.runId : config.nnodes > 1 ? "none" : randomHexId();
  const bool elastic = (config.rdzv.backend == RendezvousBackend::C10d && config.rdzv.maxNodes > 1) ||
                       config.rdzv.backend == RendezvousBackend::Etcd;
  if (elastic) {
    // torchrun's default id is "none": agents started without --rdzv-id still meet.
    return runElasticAgent(
        ResolvedJob{config, inherited, command, layout, config.runId.empty() ? "none" : config.runId});
  }
  return runStaticJob(ResolvedJob{config, inherited, command, layout, runId});
}

}  // namespace

int runLauncher(const LaunchConfig& config) {
  if (config.exitWithParent) {
    // A remote agent: sshd's session process is the parent; when the connection drops it
    // ends, and SIGTERM stops this agent like any stop signal (workers included).
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() == 1) throw Error(ErrorCode::Network, "the connection that started this agent is gone already");
  }
  if (config.slurmSummary) spdlog::info("{}", *config.slurmSummary);
  for (const LaunchNote& note : config.notes) {
    if (note.warning) {
      spdlog::warn("{}", note.text);
    } else {
      spdlog::info("{}", note.text);
    }
  }
  const Environment inherited = currentEnvironment();
  if (const std::string notice = healthCheckPortNotice(inherited); !notice.empty()) spdlog::info("{}", notice);
  if (!config.remote.hosts.empty()) return runDriver(config, inherited);
  return runOnThisNode(config, withExportedVariables(inherited, config.remote));
}

}  // namespace pltrun

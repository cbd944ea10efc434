#include "launcher/placement/node_placement.h"

#include <sched.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <utility>

#include "launcher/placement/gpu_inventory.h"
#include "launcher/plan/numa_binding.h"
#include "launcher/plan/text_parsing.h"
#include "pltrun/error.h"

namespace pltrun {
namespace {

// The sysfs files under `root` (/sys; a test's fake tree), for the pure numa_binding.
SysfsReader sysfsUnder(std::string root) {
  return [root = std::move(root)](const std::string& path) -> std::optional<std::string> {
    std::ifstream file(root + "/" + path);
    if (!file) return std::nullopt;
    std::ostringstream text;
    text << file.rdbuf();
    return text.str();
  };
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
std::vector<std::vector<int>> numaBindingFor(NumaMode mode, const WorkerLayout& layout, const Environment& environment,
                                             std::vector<LaunchNote>& notes) {
  const std::vector<std::string> gpus = visibleGpuIds(
      layout.cudaVisibleDevices ? layout.cudaVisibleDevices : environmentValue(environment, "CUDA_VISIBLE_DEVICES"),
      physicalGpuCount());
  if (static_cast<int>(gpus.size()) < layout.workerCount) {
    throw Error(ErrorCode::InvalidArgument, "--numa-binding binds local rank N near GPU N, but " +
                                                std::to_string(layout.workerCount) + " workers see " +
                                                std::to_string(gpus.size()) + " GPU(s)");
  }
  const std::vector<std::string> addresses = gpuPciAddresses(gpus, environmentValue(environment, "CUDA_DEVICE_ORDER"));
  const std::set<int> allowed = usableCpus();
  const SysfsReader sysfs = sysfsUnder(environmentValue(environment, "PLTRUN_SYSFS_ROOT").value_or("/sys"));
  std::vector<std::vector<int>> cpus;
  for (int localRank = 0; localRank < layout.workerCount; ++localRank) {
    const std::set<int> chosen = numaCpusForGpu(mode, localRank, addresses, allowed, sysfs);
    notes.push_back({false, "--numa-binding " + std::string(numaModeName(mode)) + ": local rank " +
                                std::to_string(localRank) + " (GPU " + addresses[localRank] + " on NUMA node " +
                                std::to_string(numaNodeOfGpu(addresses[localRank], sysfs)) + ") runs on CPUs " +
                                cpuListText(chosen)});
    cpus.emplace_back(chosen.begin(), chosen.end());
  }
  return cpus;
}

// --auto-select-gpus: the free GPUs chosen among `gpuIds`, as the --devices list of them;
// the result holds their locks. Too few free: the refusal, before anything starts.
std::optional<AutoSelectedGpus> autoSelectedGpus(const LaunchConfig& config, const std::vector<std::string>& gpuIds,
                                                 const Environment& environment,
                                                 std::optional<DeviceSelection>& devices,
                                                 std::vector<LaunchNote>& notes) {
  if (!config.autoSelectGpus) return std::nullopt;
  AutoSelectedGpus selected = autoSelectGpus(gpusToAutoSelect(config.nprocPerNode, config.devices), gpuIds,
                                             environmentValue(environment, "CUDA_DEVICE_ORDER"));
  if (!selected.notice.empty()) notes.push_back({true, selected.notice});
  devices = listedDevices(selected.chosen);
  if (config.devices) devices->spelled = config.devices->spelled;  // errors quote the user's own words
  std::vector<std::string> chosen, busy;
  for (int index : selected.chosen) chosen.push_back(gpuIds[static_cast<size_t>(index)]);
  for (const GpuState& gpu : selected.gpus) {
    if (!gpuIsFree(gpu)) busy.push_back(busyGpuText(gpu));
  }
  notes.push_back({false, "--auto-select-gpus: GPU(s) " + joinText(chosen, ", ") + " chosen, locked for this job" +
                              (busy.empty() ? std::string() : "; " + joinText(busy, "; "))});
  return selected;
}

}  // namespace

NodePlacement placeWorkersOnThisNode(const LaunchConfig& config, const Environment& environment) {
  std::vector<std::string> gpuIds;
  if (config.autoSelectGpus || layoutNeedsGpus(config.nprocPerNode, config.devices)) {
    gpuIds = visibleGpuIds(environmentValue(environment, "CUDA_VISIBLE_DEVICES"), physicalGpuCount());
  }
  std::optional<DeviceSelection> devices = config.devices;
  std::vector<LaunchNote> notes;
  std::optional<AutoSelectedGpus> autoSelected = autoSelectedGpus(config, gpuIds, environment, devices, notes);
  WorkerLayout layout = resolveWorkerLayout(config.nprocPerNode, devices, gpuIds, usableCpuCount());
  if (config.numaBinding) layout.workerCpus = numaBindingFor(*config.numaBinding, layout, environment, notes);
  // Built in place: the GPUs' locks move, but are never assigned over.
  return NodePlacement{std::move(layout), std::move(autoSelected), std::move(notes)};
}

}  // namespace pltrun

#include "launcher/plan/worker_layout.h"

#include "launcher/plan/device_selection.h"
#include "launcher/plan/text_parsing.h"
#include "pltrun/error.h"

namespace pltrun {
namespace {

int countFromNproc(const std::string& nproc, const std::vector<std::string>& gpus, int cpuCount) {
  const int gpuCount = static_cast<int>(gpus.size());
  if (nproc == "gpu") {
    if (gpuCount == 0) {
      throwInvalidFlag("--nproc-per-node", nproc,
                       "no GPU is visible (no NVIDIA driver, or CUDA_VISIBLE_DEVICES hides them); use a "
                       "number, cpu or auto");
    }
    return gpuCount;
  }
  if (nproc == "cpu") return cpuCount;
  if (nproc == "auto") return gpuCount > 0 ? gpuCount : cpuCount;
  checkWorkerCount(nproc);
  return static_cast<int>(*parseInteger(trimSpaces(nproc)));
}

}  // namespace

void checkWorkerCount(const std::string& nproc) {
  if (nproc == "gpu" || nproc == "cpu" || nproc == "auto") return;
  const auto count = parseInteger(trimSpaces(nproc));
  if (!count || *count < 1 || *count > kMaxWorkersPerNode) {
    throwInvalidFlag("--nproc-per-node", nproc, "expected a positive integer, gpu, cpu or auto");
  }
}

bool layoutNeedsGpus(const std::optional<std::string>& nprocPerNode, const std::optional<std::string>& devices) {
  return devices || (nprocPerNode && (*nprocPerNode == "gpu" || *nprocPerNode == "auto"));
}

WorkerLayout resolveWorkerLayout(const std::optional<std::string>& nprocPerNode,
                                 const std::optional<std::string>& devices,
                                 const std::vector<std::string>& visibleGpuIds, int cpuCount) {
  WorkerLayout layout;
  if (!devices) {
    layout.workerCount = nprocPerNode ? countFromNproc(*nprocPerNode, visibleGpuIds, cpuCount) : 1;
    return layout;
  }
  std::vector<int> selected = parseDevices(*devices, static_cast<int>(visibleGpuIds.size()));
  layout.cudaVisibleDevices = cudaVisibleDevicesFor(selected, visibleGpuIds);
  if (selected.empty()) {  // "--devices 0": CPU workers, every GPU hidden
    if (nprocPerNode && *nprocPerNode == "gpu") {
      throwInvalidFlag("--nproc-per-node", *nprocPerNode, "--devices 0 selects no GPU; use a number or cpu");
    }
    // The workers see no GPU, so "auto" means the CPU count, as torchrun's does without CUDA.
    layout.workerCount = nprocPerNode ? countFromNproc(*nprocPerNode, {}, cpuCount) : 1;
    return layout;
  }
  layout.workerCount = static_cast<int>(selected.size());
  if (nprocPerNode && parseInteger(*nprocPerNode) && *parseInteger(*nprocPerNode) != layout.workerCount) {
    throwInvalidFlag("--nproc-per-node", *nprocPerNode,
                     "--devices '" + *devices + "' selects " + std::to_string(layout.workerCount) +
                         " GPUs, one worker each; drop --nproc-per-node or make them agree");
  }
  return layout;
}

}  // namespace pltrun

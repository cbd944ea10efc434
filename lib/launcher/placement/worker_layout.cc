#include "launcher/placement/worker_layout.h"

#include "launcher/plan/text_parsing.h"

namespace pltrun {
namespace {

constexpr const char* kFlag = "--nproc-per-node";

int workersFor(const WorkerCount& nproc, int gpuCount, int cpuCount) {
  switch (nproc.kind) {
    case WorkerCount::Kind::Gpu:
      if (gpuCount == 0) {
        throwInvalidFlag(kFlag, workerCountText(nproc),
                         "no GPU is visible (no NVIDIA driver, or CUDA_VISIBLE_DEVICES hides them); use a "
                         "number, cpu or auto");
      }
      return gpuCount;
    case WorkerCount::Kind::Cpu:
      return cpuCount;
    case WorkerCount::Kind::Auto:
      return gpuCount > 0 ? gpuCount : cpuCount;
    case WorkerCount::Kind::Fixed:
      break;
  }
  return nproc.count;
}

}  // namespace

bool layoutNeedsGpus(const std::optional<WorkerCount>& nprocPerNode, const std::optional<DeviceSelection>& devices) {
  return devices || (nprocPerNode &&
                     (nprocPerNode->kind == WorkerCount::Kind::Gpu || nprocPerNode->kind == WorkerCount::Kind::Auto));
}

WorkerLayout resolveWorkerLayout(const std::optional<WorkerCount>& nprocPerNode,
                                 const std::optional<DeviceSelection>& devices,
                                 const std::vector<std::string>& visibleGpuIds, int cpuCount) {
  WorkerLayout layout;
  const int gpuCount = static_cast<int>(visibleGpuIds.size());
  if (!devices) {
    layout.workerCount = nprocPerNode ? workersFor(*nprocPerNode, gpuCount, cpuCount) : 1;
    return layout;
  }
  std::vector<int> selected = selectDevices(*devices, gpuCount);
  layout.cudaVisibleDevices = cudaVisibleDevicesFor(selected, visibleGpuIds);
  if (selected.empty()) {  // "--devices 0": CPU workers, every GPU hidden
    if (nprocPerNode && nprocPerNode->kind == WorkerCount::Kind::Gpu) {
      throwInvalidFlag(kFlag, workerCountText(*nprocPerNode), "--devices 0 selects no GPU; use a number or cpu");
    }
    // The workers see no GPU, so "auto" means the CPU count, as torchrun's does without CUDA.
    layout.workerCount = nprocPerNode ? workersFor(*nprocPerNode, 0, cpuCount) : 1;
    return layout;
  }
  layout.workerCount = static_cast<int>(selected.size());
  if (nprocPerNode && nprocPerNode->kind == WorkerCount::Kind::Fixed && nprocPerNode->count != layout.workerCount) {
    throwInvalidFlag(kFlag, workerCountText(*nprocPerNode),
                     "--devices '" + devices->spelled + "' selects " + std::to_string(layout.workerCount) +
                         " GPUs, one worker each; drop --nproc-per-node or make them agree");
  }
  return layout;
}

}  // namespace pltrun

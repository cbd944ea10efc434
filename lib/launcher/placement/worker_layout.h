#pragma once
// How many workers this node runs and which GPUs they see, from --nproc-per-node and
// --devices as parsed values. Pure: the GPUs and CPUs are passed in, so every combination
// is testable.

#include <optional>
#include <string>
#include <vector>

#include "launcher/plan/device_selection.h"
#include "launcher/plan/worker_count.h"

namespace pltrun {

struct WorkerLayout {
  int workerCount = 1;
  /// Set when --devices chose the GPUs; "" hides every GPU (--devices 0).
  std::optional<std::string> cudaVisibleDevices;
  /// --numa-binding: the CPUs of each local rank; empty: no binding.
  std::vector<std::vector<int>> workerCpus;
};

/// True when resolving the layout needs the GPU inventory (so NVML is loaded only then).
bool layoutNeedsGpus(const std::optional<WorkerCount>& nprocPerNode, const std::optional<DeviceSelection>& devices);

/// `visibleGpuIds` as from visibleGpuIds(); `cpuCount` the CPUs this process may run on.
/// Throws InvalidArgument for impossible requests (GPUs asked for where there are none,
/// a worker count that contradicts the chosen devices).
WorkerLayout resolveWorkerLayout(const std::optional<WorkerCount>& nprocPerNode,
                                 const std::optional<DeviceSelection>& devices,
                                 const std::vector<std::string>& visibleGpuIds, int cpuCount);

}  // namespace pltrun

#pragma once
// How many workers this node runs and which GPUs they see, from --nproc-per-node and
// --devices. Pure: the GPUs and CPUs are passed in, so every combination is testable.

#include <optional>
#include <string>
#include <vector>

namespace pltrun {

struct WorkerLayout {
  int workerCount = 1;
  /// Set when --devices chose the GPUs; "" hides every GPU (--devices 0).
  std::optional<std::string> cudaVisibleDevices;
};

/// The most workers --nproc-per-node may ask for on one node.
constexpr int kMaxWorkersPerNode = 4096;

/// Checks an --nproc-per-node value: 1..kMaxWorkersPerNode, gpu, cpu or auto (spaces
/// around a number allowed); throws the flag's error otherwise.
void checkWorkerCount(const std::string& nproc);

/// True when resolving the layout needs the GPU inventory (so NVML is loaded only then).
bool layoutNeedsGpus(const std::optional<std::string>& nprocPerNode, const std::optional<std::string>& devices);

/// `visibleGpuIds` as from visibleGpuIds(); `cpuCount` the CPUs this process may run on.
/// Throws InvalidArgument for impossible requests (GPUs asked for where there are none,
/// a worker count that contradicts the chosen devices).
WorkerLayout resolveWorkerLayout(const std::optional<std::string>& nprocPerNode,
                                 const std::optional<std::string>& devices,
                                 const std::vector<std::string>& visibleGpuIds, int cpuCount);

}  // namespace pltrun

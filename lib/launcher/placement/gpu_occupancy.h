#pragma once
// Who occupies each GPU: NVML's compute processes and compute mode per device, the process
// names from /proc/PID/comm. Tests and GPU-less machines describe the same with variables
// beside PLTRUN_FAKE_GPUS (which makes NVML unread):
//   PLTRUN_FAKE_GPU_BUSY=0:1234:python,2:5678   GPU index:pid[:name], one entry per process
//                                               (no name: /proc/PID/comm, if that pid runs)
//   PLTRUN_FAKE_GPU_MODE=exclusive              every GPU's compute mode, or per GPU:
//   PLTRUN_FAKE_GPU_MODE=0:exclusive,3:prohibited   (default, exclusive, prohibited)

#include <optional>
#include <string>
#include <vector>

#include "launcher/placement/gpu_choice.h"

namespace pltrun {

/// The state of each GPU in `ids` (visibleGpuIds' entries: indices in CUDA's order under the
/// workers' CUDA_DEVICE_ORDER `cudaDeviceOrder`, cuda_device_order.h), in their order;
/// lockedByPltrun is left for gpu_lock.h. A GPU NVML cannot find, or whose CUDA index pltrun
/// cannot map, has `unknown` set. Throws InvalidArgument naming the variable for a malformed
/// PLTRUN_FAKE_GPU_BUSY or PLTRUN_FAKE_GPU_MODE.
std::vector<GpuState> readGpuOccupancy(const std::vector<std::string>& ids,
                                       const std::optional<std::string>& cudaDeviceOrder = std::nullopt);

}  // namespace pltrun

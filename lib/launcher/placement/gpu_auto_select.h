#pragma once
// --auto-select-gpus on one node: read who occupies each visible GPU (gpu_occupancy.h),
// take the locks of the free ones (gpu_lock.h), choose (gpu_choice.h), keep the locks of
// the chosen GPUs for the job's life.

#include <optional>
#include <string>
#include <vector>

#include "launcher/placement/gpu_choice.h"
#include "launcher/placement/gpu_lock.h"

namespace pltrun {

struct AutoSelectedGpus {
  std::vector<int> chosen;     ///< indices into the visible GPUs, in their order
  std::vector<GpuState> gpus;  ///< the snapshot chosen from, for the launcher's log line
  GpuLocks locks;              ///< held until this object goes: keep it for the job's life
  std::string notice;          ///< a line to warn with (GpuLocks::notice), or empty
};

/// Chooses `count` free GPUs (-1: every free one) among `visibleIds` (visibleGpuIds'
/// entries; indices in CUDA's order under the workers' CUDA_DEVICE_ORDER `cudaDeviceOrder`).
/// Throws InvalidArgument with the one-line refusal when too few are free.
AutoSelectedGpus autoSelectGpus(int count, const std::vector<std::string>& visibleIds,
                                const std::optional<std::string>& cudaDeviceOrder = std::nullopt);

}  // namespace pltrun

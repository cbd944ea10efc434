#pragma once
// Which GPUs this process may use: the driver's count (NVML, loaded at run time so pltrun
// has no link dependency on the driver) narrowed by CUDA_VISIBLE_DEVICES.

#include <optional>
#include <string>
#include <vector>

namespace pltrun {

/// GPUs the driver reports, or 0 when there is no driver. PLTRUN_FAKE_GPUS=N replaces the
/// driver's answer, for tests and for machines where NVML cannot be loaded.
int physicalGpuCount();

/// The device ids this process can see, as CUDA numbers them: the entries of
/// CUDA_VISIBLE_DEVICES when it is set (up to the first invalid one, as CUDA reads it),
/// else "0".."physicalCount-1".
std::vector<std::string> visibleGpuIds(const std::optional<std::string>& cudaVisibleDevices, int physicalCount);

}  // namespace pltrun

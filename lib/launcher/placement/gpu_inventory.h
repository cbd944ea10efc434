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

/// The PCI address ("0000:3b:00.0", as sysfs names it) of each GPU in `ids` (visibleGpuIds'
/// entries: CUDA indices, in CUDA's order under the workers' CUDA_DEVICE_ORDER
/// `cudaDeviceOrder` (cuda_device_order.h), or GPU-/MIG- UUIDs), from NVML.
/// PLTRUN_FAKE_GPU_PCI=ADDR,ADDR,... replaces NVML's answer, for tests. Throws
/// InvalidArgument saying which GPU could not be found, and why.
std::vector<std::string> gpuPciAddresses(const std::vector<std::string>& ids,
                                         const std::optional<std::string>& cudaDeviceOrder);

}  // namespace pltrun

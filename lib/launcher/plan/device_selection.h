#pragma once
// Lightning's `devices` strings, parsed exactly as its GPU guide's table reads
// (seed 004): "3" = the first three GPUs, "1, 3" = GPUs 1 and 3, "-1" = every GPU,
// "0" = no GPU. Indices count the GPUs this process can see (after CUDA_VISIBLE_DEVICES).

#include <string>
#include <vector>

namespace pltrun {

/// The GPU indices `value` selects among `visibleGpuCount` GPUs, in the order given; empty
/// means "no GPU". Throws InvalidArgument naming --devices for malformed values, duplicates
/// and GPUs that are not there.
std::vector<int> parseDevices(const std::string& value, int visibleGpuCount);

/// The CUDA_VISIBLE_DEVICES value that exposes `selected` (indices into `visibleIds`, the
/// ids this process sees: the entries of its own CUDA_VISIBLE_DEVICES, or "0".."n-1").
std::string cudaVisibleDevicesFor(const std::vector<int>& selected, const std::vector<std::string>& visibleIds);

}  // namespace pltrun

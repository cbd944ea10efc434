#pragma once
// Which GPU a worker uses, as NVIDIA's DCGM exporter names it (its `gpu` and `UUID` labels),
// for `pltrun_rank_info` (metrics/job_metrics.h): so that per-GPU metrics join the ranks.

#include <optional>
#include <string>
#include <vector>

namespace pltrun {

/// The CUDA id of the GPU a worker uses, as torch's `cuda:LOCAL_RANK` picks it: entry
/// `localRank` (its LOCAL_RANK) of the GPUs its CUDA_VISIBLE_DEVICES lets it see
/// (visibleGpuIds), else of "0".."physicalCount-1"; none when it sees fewer. Pure.
std::optional<std::string> cudaIdOfWorker(int localRank, const std::optional<std::string>& cudaVisibleDevices,
                                          int physicalCount);

struct GpuIdentity {
  std::optional<int> nvmlIndex;  ///< DCGM's `gpu`; none when NVML cannot say
  std::string uuid;              ///< DCGM's `UUID`, "GPU-..."; empty when NVML cannot say
};

/// NVML's index and UUID of each GPU of `ids` (CUDA ids: indices in CUDA's order under the
/// workers' CUDA_DEVICE_ORDER `cudaDeviceOrder`, or UUIDs), in one NVML session: a GPU NVML
/// does not know, or every GPU without NVML, has an empty identity. Under PLTRUN_FAKE_GPUS
/// (for tests) NVML is not asked: the fake GPU at index I has NVML index I and the I-th
/// UUID of PLTRUN_FAKE_GPU_UUIDS=GPU-a,GPU-b,... (none past its end), and a UUID id is the
/// fake GPU it names.
std::vector<GpuIdentity> identifyGpus(const std::vector<std::string>& ids,
                                      const std::optional<std::string>& cudaDeviceOrder);

}  // namespace pltrun

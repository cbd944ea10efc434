#pragma once
// The GPU of each worker of an attempt, for `pltrun_rank_info` (its `gpu` and `UUID`
// labels): looked up once per attempt, in one NVML session, from each worker's own
// environment (its LOCAL_RANK-th GPU under its CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER).

#include <sys/types.h>

#include <functional>
#include <map>
#include <vector>

#include "launcher/metrics/job_metrics.h"
#include "launcher/placement/gpu_identity.h"

namespace pltrun {

struct WorkerSpec;

/// By rank: the NVML index and UUID of each worker's GPU; a worker without a GPU (or whose
/// GPU NVML does not know) is left out.
std::map<int, GpuIdentity> gpusOfWorkers(const std::vector<WorkerSpec>& specs);

/// What recordWorkerMetrics asks of a worker as it starts: its rank, pid and GPU from `gpus`.
std::function<RankIdentity(int rank, int localRank, pid_t pid)> identifyWorkers(std::map<int, GpuIdentity> gpus);

}  // namespace pltrun

#include "launcher/metrics/worker_gpus.h"

#include <optional>
#include <string>

#include "launcher/group/worker_group.h"
#include "launcher/placement/gpu_inventory.h"
#include "launcher/plan/text_parsing.h"

namespace pltrun {
namespace {

// The value of `name` among a launch's "KEY=VALUE" entries.
std::optional<std::string> variable(const std::vector<std::string>& environment, const std::string& name) {
  const std::string prefix = name + "=";
  for (const std::string& entry : environment) {
    if (entry.compare(0, prefix.size(), prefix) == 0) return entry.substr(prefix.size());
  }
  return std::nullopt;
}

}  // namespace

std::map<int, GpuIdentity> gpusOfWorkers(const std::vector<WorkerSpec>& specs) {
  const int physical = physicalGpuCount();
  std::vector<int> ranks;
  std::vector<std::string> ids;
  std::optional<std::string> order;
  for (const WorkerSpec& spec : specs) {
    const std::vector<std::string>& environment = spec.launch.environment;
    const std::optional<long long> localRank = parseInteger(variable(environment, "LOCAL_RANK").value_or(""));
    if (!localRank) continue;
    const auto id =
        cudaIdOfWorker(static_cast<int>(*localRank), variable(environment, "CUDA_VISIBLE_DEVICES"), physical);
    if (!id) continue;
    ranks.push_back(spec.rank);
    ids.push_back(*id);
    order = variable(environment, "CUDA_DEVICE_ORDER");  // the same for every worker
  }
  std::map<int, GpuIdentity> gpus;
  const std::vector<GpuIdentity> found = ids.empty() ? std::vector<GpuIdentity>{} : identifyGpus(ids, order);
  for (size_t at = 0; at < found.size(); ++at) {
    if (found[at].nvmlIndex || !found[at].uuid.empty()) gpus[ranks[at]] = found[at];
  }
  return gpus;
}

std::function<RankIdentity(int rank, int localRank, pid_t pid)> identifyWorkers(std::map<int, GpuIdentity> gpus) {
  return [gpus = std::move(gpus)](int rank, int localRank, pid_t pid) {
    RankIdentity identity{rank, localRank, pid, std::nullopt, ""};
    auto gpu = gpus.find(rank);
    if (gpu != gpus.end()) {
      identity.gpuIndex = gpu->second.nvmlIndex;
      identity.gpuUuid = gpu->second.uuid;
    }
    return identity;
  };
}

}  // namespace pltrun

#include "launcher/placement/gpu_identity.h"

#include <cstdlib>

#include "launcher/placement/gpu_inventory.h"
#include "launcher/placement/nvml_library.h"
#include "launcher/plan/text_parsing.h"

namespace pltrun {
namespace {

// PLTRUN_FAKE_GPUS's GPUs: index I is NVML's I, with the I-th of PLTRUN_FAKE_GPU_UUIDS.
std::vector<GpuIdentity> fakeIdentities(const std::vector<std::string>& ids, int count) {
  std::vector<std::string> uuids;
  if (const char* fake = std::getenv("PLTRUN_FAKE_GPU_UUIDS")) {
    for (std::string_view uuid : splitText(fake, ',')) uuids.emplace_back(trimSpaces(uuid));
  }
  std::vector<GpuIdentity> identities(ids.size());
  for (size_t at = 0; at < ids.size(); ++at) {
    std::optional<long long> index = parseInteger(ids[at]);
    for (size_t named = 0; !index && named < uuids.size(); ++named) {
      if (!uuids[named].empty() && uuids[named] == ids[at]) index = static_cast<long long>(named);
    }
    if (!index || *index < 0 || *index >= count) continue;
    identities[at].nvmlIndex = static_cast<int>(*index);
    if (static_cast<size_t>(*index) < uuids.size()) identities[at].uuid = uuids[static_cast<size_t>(*index)];
  }
  return identities;
}

}  // namespace

std::optional<std::string> cudaIdOfWorker(int localRank, const std::optional<std::string>& cudaVisibleDevices,
                                          int physicalCount) {
  const std::vector<std::string> visible = visibleGpuIds(cudaVisibleDevices, physicalCount);
  if (localRank < 0 || static_cast<size_t>(localRank) >= visible.size()) return std::nullopt;
  return visible[static_cast<size_t>(localRank)];
}

std::vector<GpuIdentity> identifyGpus(const std::vector<std::string>& ids,
                                      const std::optional<std::string>& cudaDeviceOrder) {
  if (std::getenv("PLTRUN_FAKE_GPUS") != nullptr) return fakeIdentities(ids, physicalGpuCount());
  std::vector<GpuIdentity> identities(ids.size());
  if (ids.empty()) return identities;
  nvml::withNvml([&](auto symbol) {
    for (size_t at = 0; at < ids.size(); ++at) {
      nvml::Device device = nullptr;
      if (!nvml::deviceHandle(symbol, ids[at], cudaDeviceOrder, &device).empty()) continue;
      const auto [index, uuid] = nvml::indexAndUuid(symbol, device);
      if (index) identities[at].nvmlIndex = static_cast<int>(*index);
      identities[at].uuid = uuid;
    }
  });
  return identities;
}

}  // namespace pltrun

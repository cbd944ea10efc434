#include "launcher/placement/gpu_inventory.h"

#include <cstdio>
#include <cstdlib>
#include <set>

#include "launcher/placement/nvml_library.h"
#include "launcher/plan/text_parsing.h"
#include "pltrun/error.h"

namespace pltrun {
namespace {

using nvml::kSuccess;
using nvml::withNvml;
using NvmlDeviceGetCount = int (*)(unsigned int*);

int countWithNvml() {
  unsigned int count = 0;
  withNvml([&count](auto symbol) {
    auto getCount = reinterpret_cast<NvmlDeviceGetCount>(symbol("nvmlDeviceGetCount_v2"));
    if (getCount == nullptr || getCount(&count) != kSuccess) count = 0;
  });
  return static_cast<int>(count);
}

using NvmlGetPciInfo = int (*)(nvml::Device, nvml::PciInfo*);

// The PCI addresses of `ids` from NVML; for a GPU it did not find, an empty address and why.
std::vector<std::string> pciAddressesFromNvml(const std::vector<std::string>& ids,
                                              const std::optional<std::string>& cudaDeviceOrder,
                                              std::vector<std::string>& problems) {
  std::vector<std::string> addresses(ids.size());
  problems.assign(ids.size(), "NVML, libnvidia-ml.so.1, did not name it; is the NVIDIA driver loaded?");
  withNvml([&](auto symbol) {
    auto pciInfo = reinterpret_cast<NvmlGetPciInfo>(symbol("nvmlDeviceGetPciInfo_v3"));
    if (pciInfo == nullptr) return;
    for (size_t at = 0; at < ids.size(); ++at) {
      nvml::Device device = nullptr;
      nvml::PciInfo info{};
      const std::string problem = nvml::deviceHandle(symbol, ids[at], cudaDeviceOrder, &device);
      if (!problem.empty()) problems[at] = problem;
      if (!problem.empty() || pciInfo(device, &info) != kSuccess) continue;
      char text[32];
      std::snprintf(text, sizeof text, "%04x:%02x:%02x.0", info.domain, info.bus, info.device);
      addresses[at] = text;
    }
  });
  return addresses;
}

}  // namespace

int physicalGpuCount() {
  if (const char* fake = std::getenv("PLTRUN_FAKE_GPUS")) {
    auto count = parseInteger(fake);
    return count && *count >= 0 ? static_cast<int>(*count) : 0;
  }
  return countWithNvml();
}

std::vector<std::string> gpuPciAddresses(const std::vector<std::string>& ids,
                                         const std::optional<std::string>& cudaDeviceOrder) {
  std::vector<std::string> addresses, problems(ids.size(), "PLTRUN_FAKE_GPU_PCI does not name it");
  if (const char* fake = std::getenv("PLTRUN_FAKE_GPU_PCI")) {
    for (std::string_view address : splitText(fake, ',')) addresses.emplace_back(trimSpaces(address));
    addresses.resize(ids.size());  // one per GPU: extra ones dropped, missing ones empty
  } else {
    addresses = pciAddressesFromNvml(ids, cudaDeviceOrder, problems);
  }
  for (size_t at = 0; at < ids.size(); ++at) {
    if (addresses[at].empty()) {
      throw Error(ErrorCode::InvalidArgument,
                  "--numa-binding: no PCI address for GPU " + ids[at] + " (" + problems[at] + ")");
    }
  }
  return addresses;
}

std::vector<std::string> visibleGpuIds(const std::optional<std::string>& cudaVisibleDevices, int physicalCount) {
  std::vector<std::string> ids;
  if (!cudaVisibleDevices) {
    for (int index = 0; index < physicalCount; ++index) ids.push_back(std::to_string(index));
    return ids;
  }
  // CUDA stops at the first entry it cannot use and ignores repeats of earlier ones.
  std::set<std::string> seen;
  for (std::string_view entry : splitText(*cudaVisibleDevices, ',')) {
    entry = trimSpaces(entry);
    auto index = parseInteger(entry);
    bool usable = nvml::isDeviceUuid(entry) || (index && *index >= 0 && *index < physicalCount);
    if (!usable || !seen.insert(std::string(entry)).second) break;
    ids.emplace_back(entry);
  }
  return ids;
}

}  // namespace pltrun

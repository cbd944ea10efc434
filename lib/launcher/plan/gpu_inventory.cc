#include "launcher/plan/gpu_inventory.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "launcher/plan/text_parsing.h"
#include "pltrun/error.h"

namespace pltrun {
namespace {

// NVML's C API, declared here so no NVML header or library is needed to build.
using NvmlInit = int (*)();
using NvmlShutdown = int (*)();
using NvmlDeviceGetCount = int (*)(unsigned int*);
constexpr int kNvmlSuccess = 0;

int countWithNvml() {
  void* nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (nvml == nullptr) return 0;
  auto init = reinterpret_cast<NvmlInit>(dlsym(nvml, "nvmlInit_v2"));
  auto getCount = reinterpret_cast<NvmlDeviceGetCount>(dlsym(nvml, "nvmlDeviceGetCount_v2"));
  auto shutdown = reinterpret_cast<NvmlShutdown>(dlsym(nvml, "nvmlShutdown"));
  unsigned int count = 0;
  if (init != nullptr && getCount != nullptr && init() == kNvmlSuccess) {
    if (getCount(&count) != kNvmlSuccess) count = 0;
    if (shutdown != nullptr) shutdown();
  }
  dlclose(nvml);
  return static_cast<int>(count);
}

// nvmlPciInfo_t of nvmlDeviceGetPciInfo_v3 (NVML 2.285 and later).
struct NvmlPciInfo {
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};
using NvmlDevice = void*;
using NvmlGetHandleByIndex = int (*)(unsigned int, NvmlDevice*);
using NvmlGetHandleByUuid = int (*)(const char*, NvmlDevice*);
using NvmlGetPciInfo = int (*)(NvmlDevice, NvmlPciInfo*);

bool isDeviceUuid(std::string_view id);

// The PCI addresses of `ids` from NVML; an empty string for a GPU it did not find.
std::vector<std::string> pciAddressesFromNvml(const std::vector<std::string>& ids) {
  std::vector<std::string> addresses(ids.size());
  void* nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (nvml == nullptr) return addresses;
  auto init = reinterpret_cast<NvmlInit>(dlsym(nvml, "nvmlInit_v2"));
  auto shutdown = reinterpret_cast<NvmlShutdown>(dlsym(nvml, "nvmlShutdown"));
  auto byIndex = reinterpret_cast<NvmlGetHandleByIndex>(dlsym(nvml, "nvmlDeviceGetHandleByIndex_v2"));
  auto byUuid = reinterpret_cast<NvmlGetHandleByUuid>(dlsym(nvml, "nvmlDeviceGetHandleByUUID"));
  auto pciInfo = reinterpret_cast<NvmlGetPciInfo>(dlsym(nvml, "nvmlDeviceGetPciInfo_v3"));
  if (init != nullptr && byIndex != nullptr && byUuid != nullptr && pciInfo != nullptr && init() == kNvmlSuccess) {
    for (size_t at = 0; at < ids.size(); ++at) {
      NvmlDevice device = nullptr;
      const auto index = parseInteger(ids[at]);
      const int found = isDeviceUuid(ids[at]) ? byUuid(ids[at].c_str(), &device)
                        : index               ? byIndex(static_cast<unsigned int>(*index), &device)
                                              : -1;
      NvmlPciInfo info{};
      if (found != kNvmlSuccess || pciInfo(device, &info) != kNvmlSuccess) continue;
      char text[32];
      std::snprintf(text, sizeof text, "%04x:%02x:%02x.0", info.domain, info.bus, info.device);
      addresses[at] = text;
    }
    if (shutdown != nullptr) shutdown();
  }
  dlclose(nvml);
  return addresses;
}

bool isDeviceUuid(std::string_view id) { return id.rfind("GPU-", 0) == 0 || id.rfind("MIG-", 0) == 0; }

}  // namespace

int physicalGpuCount() {
  if (const char* fake = std::getenv("PLTRUN_FAKE_GPUS")) {
    auto count = parseInteger(fake);
    return count && *count >= 0 ? static_cast<int>(*count) : 0;
  }
  return countWithNvml();
}

std::vector<std::string> gpuPciAddresses(const std::vector<std::string>& ids) {
  std::vector<std::string> addresses;
  if (const char* fake = std::getenv("PLTRUN_FAKE_GPU_PCI")) {
    for (std::string_view address : splitText(fake, ',')) addresses.emplace_back(trimSpaces(address));
    addresses.resize(std::min(addresses.size(), ids.size()));
    addresses.resize(ids.size());
  } else {
    addresses = pciAddressesFromNvml(ids);
  }
  for (size_t at = 0; at < ids.size(); ++at) {
    if (addresses[at].empty()) {
      throw Error(ErrorCode::InvalidArgument, "--numa-binding: no PCI address for GPU " + ids[at] +
                                                  " (NVML, libnvidia-ml.so.1, did not name it); is the NVIDIA driver "
                                                  "loaded?");
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
    bool usable = isDeviceUuid(entry) || (index && *index >= 0 && *index < physicalCount);
    if (!usable || !seen.insert(std::string(entry)).second) break;
    ids.emplace_back(entry);
  }
  return ids;
}

}  // namespace pltrun

#include "launcher/placement/gpu_inventory.h"

#include <dlfcn.h>

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

// Runs `use(symbol)` with NVML loaded and initialised (symbol(name) looks a function up);
// false, without calling it, when there is no driver or NVML does not start.
template <typename Use>
bool withNvml(Use use) {
  void* nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (nvml == nullptr) return false;
  auto init = reinterpret_cast<NvmlInit>(dlsym(nvml, "nvmlInit_v2"));
  auto shutdown = reinterpret_cast<NvmlShutdown>(dlsym(nvml, "nvmlShutdown"));
  const bool started = init != nullptr && init() == kNvmlSuccess;
  if (started) {
    use([nvml](const char* name) { return dlsym(nvml, name); });
    if (shutdown != nullptr) shutdown();
  }
  dlclose(nvml);
  return started;
}

int countWithNvml() {
  unsigned int count = 0;
  withNvml([&count](auto symbol) {
    auto getCount = reinterpret_cast<NvmlDeviceGetCount>(symbol("nvmlDeviceGetCount_v2"));
    if (getCount == nullptr || getCount(&count) != kNvmlSuccess) count = 0;
  });
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
  withNvml([&](auto symbol) {
    auto byIndex = reinterpret_cast<NvmlGetHandleByIndex>(symbol("nvmlDeviceGetHandleByIndex_v2"));
    auto byUuid = reinterpret_cast<NvmlGetHandleByUuid>(symbol("nvmlDeviceGetHandleByUUID"));
    auto pciInfo = reinterpret_cast<NvmlGetPciInfo>(symbol("nvmlDeviceGetPciInfo_v3"));
    if (byIndex == nullptr || byUuid == nullptr || pciInfo == nullptr) return;
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
  });
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
    addresses.resize(ids.size());  // one per GPU: extra ones dropped, missing ones empty
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

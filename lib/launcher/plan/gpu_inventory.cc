#include "launcher/plan/gpu_inventory.h"

#include <dlfcn.h>

#include <cstdlib>
#include <set>

#include "launcher/plan/text_parsing.h"

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

bool isDeviceUuid(std::string_view id) { return id.rfind("GPU-", 0) == 0 || id.rfind("MIG-", 0) == 0; }

}  // namespace

int physicalGpuCount() {
  if (const char* fake = std::getenv("PLTRUN_FAKE_GPUS")) {
    auto count = parseInteger(fake);
    return count && *count >= 0 ? static_cast<int>(*count) : 0;
  }
  return countWithNvml();
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

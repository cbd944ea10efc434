#pragma once
// The driver's NVML library, loaded at run time (dlopen) so pltrun has no link dependency on
// the driver: what gpu_inventory.cc (counts, PCI addresses) and gpu_occupancy.cc (processes,
// compute modes) share. NVML's C API is declared here, so no NVML header is needed to build.

#include <dlfcn.h>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "launcher/placement/cuda_device_order.h"
#include "launcher/plan/text_parsing.h"

namespace pltrun::nvml {

constexpr int kSuccess = 0;
constexpr int kInsufficientSize = 7;  // NVML_ERROR_INSUFFICIENT_SIZE
using Device = void*;

/// A GPU as CUDA_VISIBLE_DEVICES may name it by UUID ("GPU-...", or a MIG instance's "MIG-...").
inline bool isDeviceUuid(std::string_view id) { return id.rfind("GPU-", 0) == 0 || id.rfind("MIG-", 0) == 0; }

/// Runs `use(symbol)` with NVML loaded and initialised (symbol(name) looks a function up);
/// false, without calling it, when there is no driver or NVML does not start.
template <typename Use>
bool withNvml(Use use) {
  using Init = int (*)();
  using Shutdown = int (*)();
  void* library = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) return false;
  auto init = reinterpret_cast<Init>(dlsym(library, "nvmlInit_v2"));
  auto shutdown = reinterpret_cast<Shutdown>(dlsym(library, "nvmlShutdown"));
  const bool started = init != nullptr && init() == kSuccess;
  if (started) {
    use([library](const char* name) { return dlsym(library, name); });
    if (shutdown != nullptr) shutdown();
  }
  dlclose(library);
  return started;
}

// nvmlPciInfo_t of nvmlDeviceGetPciInfo_v3 (NVML 2.285 and later).
struct PciInfo {
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};

/// Every GPU NVML lists, in NVML's order, with its PCI address and model; empty when NVML
/// cannot say.
template <typename Symbol>
std::vector<NvmlGpu> listGpus(Symbol symbol) {
  using GetCount = int (*)(unsigned int*);
  using ByIndex = int (*)(unsigned int, Device*);
  using GetPciInfo = int (*)(Device, PciInfo*);
  using GetName = int (*)(Device, char*, unsigned int);
  auto getCount = reinterpret_cast<GetCount>(symbol("nvmlDeviceGetCount_v2"));
  auto byIndex = reinterpret_cast<ByIndex>(symbol("nvmlDeviceGetHandleByIndex_v2"));
  auto pciInfo = reinterpret_cast<GetPciInfo>(symbol("nvmlDeviceGetPciInfo_v3"));
  auto getName = reinterpret_cast<GetName>(symbol("nvmlDeviceGetName"));
  unsigned int count = 0;
  if (getCount == nullptr || byIndex == nullptr || pciInfo == nullptr || getCount(&count) != kSuccess) return {};
  std::vector<NvmlGpu> gpus;
  for (unsigned int index = 0; index < count; ++index) {
    Device device = nullptr;
    PciInfo info{};
    char model[96] = {};  // NVML_DEVICE_NAME_V2_BUFFER_SIZE
    if (byIndex(index, &device) != kSuccess || pciInfo(device, &info) != kSuccess) return {};
    if (getName != nullptr && getName(device, model, sizeof model - 1) != kSuccess) model[0] = '\0';
    gpus.push_back(NvmlGpu{info.domain, info.bus, info.device, model});
  }
  return gpus;
}

/// The handle of GPU `id` as CUDA names it: a UUID, or an index in CUDA's order under the
/// workers' CUDA_DEVICE_ORDER `order`, mapped to NVML's (cuda_device_order.h). Returns why
/// not, one phrase ("NVML does not know it"), or empty with `device` set.
template <typename Symbol>
std::string deviceHandle(Symbol symbol, const std::string& id, const std::optional<std::string>& order,
                         Device* device) {
  using ByIndex = int (*)(unsigned int, Device*);
  using ByUuid = int (*)(const char*, Device*);
  auto byIndex = reinterpret_cast<ByIndex>(symbol("nvmlDeviceGetHandleByIndex_v2"));
  auto byUuid = reinterpret_cast<ByUuid>(symbol("nvmlDeviceGetHandleByUUID"));
  const std::string unknown = "NVML does not know it";
  if (isDeviceUuid(id)) return byUuid != nullptr && byUuid(id.c_str(), device) == kSuccess ? "" : unknown;
  const auto index = parseInteger(id);
  if (byIndex == nullptr || !index || *index < 0) return unknown;
  const NvmlIndexChoice choice = nvmlIndexOfCudaIndex(static_cast<size_t>(*index), listGpus(symbol), order);
  if (!choice.nvmlIndex) return choice.problem;
  return byIndex(static_cast<unsigned int>(*choice.nvmlIndex), device) == kSuccess ? "" : unknown;
}

/// NVML's index and UUID ("GPU-...") of `device`: what NVIDIA's DCGM exporter labels its
/// metrics with (`gpu`, `UUID`). Each is empty where NVML cannot say (a MIG instance has no
/// index of its own).
template <typename Symbol>
std::pair<std::optional<unsigned int>, std::string> indexAndUuid(Symbol symbol, Device device) {
  using GetIndex = int (*)(Device, unsigned int*);
  using GetUuid = int (*)(Device, char*, unsigned int);
  auto getIndex = reinterpret_cast<GetIndex>(symbol("nvmlDeviceGetIndex"));
  auto getUuid = reinterpret_cast<GetUuid>(symbol("nvmlDeviceGetUUID"));
  std::optional<unsigned int> index;
  unsigned int value = 0;
  if (getIndex != nullptr && getIndex(device, &value) == kSuccess) index = value;
  char uuid[96] = {};  // NVML_DEVICE_UUID_V2_BUFFER_SIZE
  if (getUuid == nullptr || getUuid(device, uuid, sizeof uuid - 1) != kSuccess) uuid[0] = '\0';
  return {index, uuid};
}

}  // namespace pltrun::nvml

#pragma once
// The driver's NVML library, loaded at run time (dlopen) so pltrun has no link dependency on
// the driver: what gpu_inventory.cc (counts, PCI addresses) and gpu_occupancy.cc (processes,
// compute modes) share. NVML's C API is declared here, so no NVML header is needed to build.

#include <dlfcn.h>

#include <string>
#include <string_view>

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

/// The handle of GPU `id` (a CUDA index, taken as NVML's, or a UUID); false when NVML does
/// not know it or lacks the functions.
template <typename Symbol>
bool deviceHandle(Symbol symbol, const std::string& id, Device* device) {
  using ByIndex = int (*)(unsigned int, Device*);
  using ByUuid = int (*)(const char*, Device*);
  auto byIndex = reinterpret_cast<ByIndex>(symbol("nvmlDeviceGetHandleByIndex_v2"));
  auto byUuid = reinterpret_cast<ByUuid>(symbol("nvmlDeviceGetHandleByUUID"));
  if (isDeviceUuid(id)) return byUuid != nullptr && byUuid(id.c_str(), device) == kSuccess;
  const auto index = parseInteger(id);
  return byIndex != nullptr && index && *index >= 0 && byIndex(static_cast<unsigned int>(*index), device) == kSuccess;
}

}  // namespace pltrun::nvml

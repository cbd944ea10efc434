// A stand-in for the driver's NVML (libnvidia-ml.so.1), so that pltrun's NVML path (counts,
// handles, PCI addresses, models: lib/launcher/placement/nvml_library.h) runs in tests on
// machines without a GPU. FAKE_NVML_GPUS=BUS:MODEL,BUS:MODEL lists the GPUs in NVML's
// order (PCI domain 0, device 0, BUS in hex); no process runs on any, every one is in the
// default compute mode. The e2e tests put its directory on LD_LIBRARY_PATH.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr int kSuccess = 0;
constexpr int kInvalidArgument = 2;
constexpr int kNotFound = 6;

struct Gpu {
  unsigned bus = 0;
  std::string model;
};

// nvmlPciInfo_t, as nvmlDeviceGetPciInfo_v3 fills it.
struct PciInfo {
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};

std::vector<Gpu> gpus() {
  std::vector<Gpu> list;
  const char* text = std::getenv("FAKE_NVML_GPUS");
  std::string rest = text != nullptr ? text : "";
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string entry = rest.substr(0, comma);
    rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
    const size_t colon = entry.find(':');
    list.push_back(Gpu{static_cast<unsigned>(std::strtoul(entry.substr(0, colon).c_str(), nullptr, 16)),
                       colon == std::string::npos ? "" : entry.substr(colon + 1)});
  }
  return list;
}

// A handle is the GPU's index plus one, so that none is null.
bool gpuOf(void* device, Gpu* gpu, unsigned* index = nullptr) {
  const auto list = gpus();
  const auto at = reinterpret_cast<std::uintptr_t>(device);
  if (at == 0 || at > list.size()) return false;
  *gpu = list[at - 1];
  if (index != nullptr) *index = static_cast<unsigned>(at - 1);
  return true;
}

}  // namespace

extern "C" {

int nvmlInit_v2() { return kSuccess; }
int nvmlShutdown() { return kSuccess; }

int nvmlDeviceGetCount_v2(unsigned int* count) {
  *count = static_cast<unsigned int>(gpus().size());
  return kSuccess;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned int index, void** device) {
  if (index >= gpus().size()) return kInvalidArgument;
  *device = reinterpret_cast<void*>(static_cast<std::uintptr_t>(index) + 1);
  return kSuccess;
}

int nvmlDeviceGetHandleByUUID(const char*, void**) { return kNotFound; }

int nvmlDeviceGetIndex(void* device, unsigned int* index) {
  Gpu gpu;
  return gpuOf(device, &gpu, index) ? kSuccess : kInvalidArgument;
}

int nvmlDeviceGetPciInfo_v3(void* device, PciInfo* info) {
  Gpu gpu;
  if (!gpuOf(device, &gpu)) return kInvalidArgument;
  *info = PciInfo{};
  info->bus = gpu.bus;
  std::snprintf(info->busId, sizeof info->busId, "00000000:%02X:00.0", gpu.bus);
  return kSuccess;
}

int nvmlDeviceGetName(void* device, char* name, unsigned int length) {
  Gpu gpu;
  if (!gpuOf(device, &gpu) || length == 0) return kInvalidArgument;
  std::snprintf(name, length, "%s", gpu.model.c_str());
  return kSuccess;
}

int nvmlDeviceGetComputeMode(void* device, int* mode) {
  Gpu gpu;
  *mode = 0;  // NVML_COMPUTEMODE_DEFAULT
  return gpuOf(device, &gpu) ? kSuccess : kInvalidArgument;
}

int nvmlDeviceGetComputeRunningProcesses_v3(void* device, unsigned int* count, void*) {
  Gpu gpu;
  *count = 0;
  return gpuOf(device, &gpu) ? kSuccess : kInvalidArgument;
}

}  // extern "C"

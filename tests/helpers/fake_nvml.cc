// A stand-in for the driver's NVML (libnvidia-ml.so.1), so that pltrun's NVML path (counts,
// handles, PCI addresses, models: lib/launcher/placement/nvml_library.h) runs in tests on
// machines without a GPU. FAKE_NVML_GPUS=BUS:MODEL,BUS:MODEL lists the GPUs in NVML's
// order (PCI domain 0, device 0, BUS in hex; UUID GPU-fake-0000-BUS); no process runs on any, every one is in the
// default compute mode. FAKE_NVML_HEALTH=INDEX=STATE,... makes GPUs unhealthy for the node
// health checks (lib/launcher/health/nvml_health.cc): lost (NVML_ERROR_GPU_IS_LOST from its
// handle), recovery (recovery action: reset), ecc (2 uncorrectable errors), remap (row
// remapping failed), noecc (ECC counters not supported). The e2e tests put its directory on
// LD_LIBRARY_PATH.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr int kSuccess = 0;
constexpr int kInvalidArgument = 2;
constexpr int kNotSupported = 3;
constexpr int kNotFound = 6;
constexpr int kGpuIsLost = 15;

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

// FAKE_NVML_HEALTH's state of GPU `index`: "" when healthy.
std::string healthOf(unsigned index) {
  const char* text = std::getenv("FAKE_NVML_HEALTH");
  std::string rest = text != nullptr ? text : "";
  std::string state;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string entry = rest.substr(0, comma);
    rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
    const size_t equals = entry.find('=');
    if (equals != std::string::npos && std::strtoul(entry.substr(0, equals).c_str(), nullptr, 10) == index) {
      state = entry.substr(equals + 1);
    }
  }
  return state;
}

// nvmlFieldValue_t.
struct FieldValue {
  unsigned int fieldId, scopeId;
  long long timestamp, latencyUsec;
  int valueType, nvmlReturn;
  unsigned long long value;
};

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
  if (healthOf(index) == "lost") return kGpuIsLost;
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

// "GPU-fake-0000-BUS" (BUS in hex, as FAKE_NVML_GPUS gives it): `pltrun_rank_info`'s UUID.
int nvmlDeviceGetUUID(void* device, char* uuid, unsigned int length) {
  Gpu gpu;
  if (!gpuOf(device, &gpu) || length == 0) return kInvalidArgument;
  std::snprintf(uuid, length, "GPU-fake-0000-%02x", gpu.bus);
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

int nvmlDeviceGetFieldValues(void* device, int count, FieldValue* values) {
  Gpu gpu;
  unsigned index = 0;
  if (!gpuOf(device, &gpu, &index)) return kInvalidArgument;
  for (int at = 0; at < count; ++at) {
    values[at].nvmlReturn = values[at].fieldId == 230 ? kSuccess : kNotSupported;  // the recovery action
    values[at].valueType = 1;                                                      // unsigned int
    values[at].value = healthOf(index) == "recovery" ? 1 : 0;                      // reset the GPU
  }
  return kSuccess;
}

int nvmlDeviceGetTotalEccErrors(void* device, int, int, unsigned long long* count) {
  Gpu gpu;
  unsigned index = 0;
  if (!gpuOf(device, &gpu, &index)) return kInvalidArgument;
  if (healthOf(index) == "noecc") return kNotSupported;
  *count = healthOf(index) == "ecc" ? 2 : 0;
  return kSuccess;
}

int nvmlDeviceGetRemappedRows(void* device, unsigned* corrected, unsigned* uncorrected, unsigned* pending,
                              unsigned* failed) {
  Gpu gpu;
  unsigned index = 0;
  if (!gpuOf(device, &gpu, &index)) return kInvalidArgument;
  *corrected = *uncorrected = *pending = 0;
  *failed = healthOf(index) == "remap" ? 1 : 0;
  return kSuccess;
}

}  // extern "C"

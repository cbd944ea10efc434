#include "launcher/health/nvml_health.h"

#include "launcher/placement/nvml_library.h"

namespace pltrun {
namespace {

using nvml::Device;
using nvml::kSuccess;
using State = GpuReading::State;

constexpr int kNotSupported = 3;                // NVML_ERROR_NOT_SUPPORTED
constexpr int kGpuIsLost = 15;                  // NVML_ERROR_GPU_IS_LOST
constexpr unsigned kRecoveryActionField = 230;  // NVML_FI_DEV_GET_GPU_RECOVERY_ACTION
constexpr int kUncorrected = 1;                 // NVML_MEMORY_ERROR_TYPE_UNCORRECTED
constexpr int kVolatileEcc = 0;                 // NVML_VOLATILE_ECC: since the driver loaded

// nvmlFieldValue_t.
struct FieldValue {
  unsigned int fieldId, scopeId;
  long long timestamp, latencyUsec;
  int valueType, nvmlReturn;
  unsigned long long value;  // nvmlValue_t, a union of 8 bytes
};

GpuReading notRead(int status, const char* what) {
  if (status == kNotSupported) return {State::Unsupported, std::string("not supported by this GPU or driver")};
  if (status == kGpuIsLost) return {State::Bad, "lost while reading " + std::string(what)};
  return {State::Unsupported, std::string(what) + ": NVML error " + std::to_string(status)};
}

GpuReading missing(const char* function) {
  return {State::Unsupported, std::string("this driver's NVML has no ") + function};
}

// NVML_GPU_RECOVERY_ACTION_*: none, reset the GPU, reboot the node, drain P2P, drain and reset.
std::string recoveryActionName(unsigned long long action) {
  static const char* const names[] = {"none", "reset the GPU", "reboot the node", "drain peer-to-peer traffic",
                                      "drain, then reset the GPU"};
  return action < 5 ? names[action] : "action " + std::to_string(action);
}

template <typename Symbol>
GpuReading recoveryAction(Symbol symbol, Device device) {
  using GetFields = int (*)(Device, int, FieldValue*);
  auto getFields = reinterpret_cast<GetFields>(symbol("nvmlDeviceGetFieldValues"));
  if (getFields == nullptr) return missing("nvmlDeviceGetFieldValues");
  FieldValue field{};
  field.fieldId = kRecoveryActionField;
  const int status = getFields(device, 1, &field);
  if (status != kSuccess) return notRead(status, "the recovery action");
  if (field.nvmlReturn != kSuccess) return notRead(field.nvmlReturn, "the recovery action");
  const unsigned long long action = field.value & 0xffffffffULL;  // an unsigned int
  if (action == 0) return {};
  return {State::Bad, "recovery action: " + recoveryActionName(action)};
}

template <typename Symbol>
GpuReading uncorrectableEcc(Symbol symbol, Device device) {
  using GetTotal = int (*)(Device, int, int, unsigned long long*);
  auto getTotal = reinterpret_cast<GetTotal>(symbol("nvmlDeviceGetTotalEccErrors"));
  if (getTotal == nullptr) return missing("nvmlDeviceGetTotalEccErrors");
  unsigned long long count = 0;
  const int status = getTotal(device, kUncorrected, kVolatileEcc, &count);
  if (status != kSuccess) return notRead(status, "the ECC counters");
  if (count == 0) return {};
  return {State::Bad, std::to_string(count) + " uncorrectable ECC error(s) since the driver loaded"};
}

// Row remapping (A100 and later), else page retirement (older GPUs).
template <typename Symbol>
GpuReading retiredMemory(Symbol symbol, Device device) {
  using GetRemapped = int (*)(Device, unsigned*, unsigned*, unsigned*, unsigned*);
  using GetPending = int (*)(Device, int*);
  auto remapped = reinterpret_cast<GetRemapped>(symbol("nvmlDeviceGetRemappedRows"));
  unsigned corrected = 0, uncorrected = 0, pending = 0, failed = 0;
  const int remapStatus =
      remapped != nullptr ? remapped(device, &corrected, &uncorrected, &pending, &failed) : kNotSupported;
  if (remapStatus == kSuccess) {
    if (failed != 0) return {State::Bad, "row remapping failed (the GPU needs service)"};
    if (pending != 0) return {State::Bad, "row remapping pending (a reset of the GPU applies it)"};
    return {};
  }
  if (remapStatus != kNotSupported) return notRead(remapStatus, "the remapped rows");
  auto retiredPending = reinterpret_cast<GetPending>(symbol("nvmlDeviceGetRetiredPagesPendingStatus"));
  if (retiredPending == nullptr) return missing("nvmlDeviceGetRetiredPagesPendingStatus");
  int isPending = 0;
  const int status = retiredPending(device, &isPending);
  if (status != kSuccess) return notRead(status, "the retired pages");
  if (isPending != 0) return {State::Bad, "retired pages pending (a reset of the GPU retires them)"};
  return {};
}

template <typename Symbol>
GpuObservation observe(Symbol symbol, unsigned index) {
  using ByIndex = int (*)(unsigned int, Device*);
  using GetPciInfo = int (*)(Device, nvml::PciInfo*);
  auto byIndex = reinterpret_cast<ByIndex>(symbol("nvmlDeviceGetHandleByIndex_v2"));
  auto pciInfo = reinterpret_cast<GetPciInfo>(symbol("nvmlDeviceGetPciInfo_v3"));
  GpuObservation gpu{static_cast<int>(index), {}, {}, {}, {}};
  Device device = nullptr;
  nvml::PciInfo info{};
  int status = byIndex != nullptr ? byIndex(index, &device) : kNotSupported;
  if (status == kSuccess && pciInfo != nullptr) status = pciInfo(device, &info);
  if (status != kSuccess) {
    // A GPU NVML counts but cannot open or read is as good as lost to the job.
    gpu.lost = {State::Bad, status == kGpuIsLost ? "lost, fallen off the bus"
                                                 : "NVML cannot read it (error " + std::to_string(status) + ")"};
    gpu.recovery = gpu.ecc = gpu.retired = {State::Unsupported, "the GPU cannot be read"};
    return gpu;
  }
  gpu.recovery = recoveryAction(symbol, device);
  gpu.ecc = uncorrectableEcc(symbol, device);
  gpu.retired = retiredMemory(symbol, device);
  for (GpuReading* reading : {&gpu.recovery, &gpu.ecc, &gpu.retired}) {
    if (reading->state == State::Bad && reading->detail.rfind("lost", 0) == 0) gpu.lost = *reading;
  }
  return gpu;
}

}  // namespace

GpuSurvey surveyGpusWithNvml() {
  GpuSurvey survey;
  const bool started = nvml::withNvml([&survey](auto symbol) {
    using GetCount = int (*)(unsigned int*);
    auto getCount = reinterpret_cast<GetCount>(symbol("nvmlDeviceGetCount_v2"));
    unsigned int count = 0;
    if (getCount == nullptr || getCount(&count) != kSuccess) {
      survey.unavailable = "NVML does not count this node's GPUs";
      return;
    }
    survey.count = static_cast<int>(count);
    for (unsigned index = 0; index < count; ++index) survey.gpus.push_back(observe(symbol, index));
  });
  if (!started) survey.unavailable = "no NVIDIA driver here: libnvidia-ml.so.1 did not load or start";
  return survey;
}

}  // namespace pltrun

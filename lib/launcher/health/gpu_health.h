#pragma once
// The built-in GPU checks of a node's health (node_health.h): what NVML says of each GPU,
// or PLTRUN_FAKE_GPU_HEALTH's stand-in, gathered into one verdict per check. Every check
// says on which GPUs it failed, or why it was skipped (no driver, a GPU or driver that
// does not report it).

#include <optional>
#include <string>
#include <vector>

#include "launcher/health/node_health.h"

namespace pltrun {

/// One check's reading on one GPU: fine, bad (with what was seen), or not reported (with why).
struct GpuReading {
  enum class State { Ok, Bad, Unsupported };
  State state = State::Ok;
  std::string detail;
};

/// What was read of one GPU, by NVML's index.
struct GpuObservation {
  int index = 0;
  GpuReading lost;      ///< lost, fallen off the bus
  GpuReading recovery;  ///< NVML_FI_DEV_GET_GPU_RECOVERY_ACTION other than none
  GpuReading ecc;       ///< uncorrectable ECC errors since the driver loaded
  GpuReading retired;   ///< retired pages pending, or row remapping pending / failed
};

/// What a node's GPUs look like: how many NVML lists, and each one's readings; or why none
/// could be read (no driver).
struct GpuSurvey {
  int count = 0;
  std::vector<GpuObservation> gpus;
  std::string unavailable;  ///< non-empty: no GPU could be read, and why
};

/// The names of the GPU checks, in the order they are reported.
inline const std::vector<std::string>& gpuCheckNames() {
  static const std::vector<std::string> names{"gpu count", "gpu lost", "recovery action", "ecc", "retired pages"};
  return names;
}

/// Pure: the five GPU checks' verdicts from `survey`; "gpu count" fails below `expectedGpus`.
std::vector<HealthCheckResult> gpuVerdicts(const GpuSurvey& survey, std::optional<int> expectedGpus);

/// Pure: the survey PLTRUN_FAKE_GPU_HEALTH describes ("1=lost,2=recovery"; also ecc,
/// retired, remap, unsupported) over `count` GPUs. Throws InvalidArgument on another word.
GpuSurvey fakeGpuSurvey(int count, const std::string& health);

/// The survey of this machine's GPUs: PLTRUN_FAKE_GPUS / PLTRUN_FAKE_GPU_HEALTH from
/// `inherited` when either is set, else NVML (nvml_health.h).
GpuSurvey surveyGpus(const Environment& inherited);

/// gpuVerdicts(surveyGpus(inherited), expectedGpus).
std::vector<HealthCheckResult> gpuHealthChecks(std::optional<int> expectedGpus, const Environment& inherited);

}  // namespace pltrun

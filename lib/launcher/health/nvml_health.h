#pragma once
// The GPU health readings NVML gives (nvml_library.h loads it): lost GPUs, the recovery
// action the driver asks for, uncorrectable ECC errors, retired pages and remapped rows.

#include "launcher/health/gpu_health.h"

namespace pltrun {

/// Every GPU NVML lists, read; `unavailable` says why not when NVML does not load or start.
GpuSurvey surveyGpusWithNvml();

}  // namespace pltrun

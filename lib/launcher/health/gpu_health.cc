#include "launcher/health/gpu_health.h"

#include "launcher/health/nvml_health.h"
#include "launcher/plan/text_parsing.h"
#include "pltrun/error.h"

namespace pltrun {
namespace {

using Verdict = HealthCheckResult::Verdict;
using State = GpuReading::State;
using Reading = GpuReading GpuObservation::*;

std::string gpuCountVerdictDetail(const GpuSurvey& survey, std::optional<int> expectedGpus) {
  std::string detail = std::to_string(survey.count) + " GPU(s)";
  if (expectedGpus) detail += ", " + std::to_string(*expectedGpus) + " expected";
  return detail;
}

HealthCheckResult gpuCountVerdict(const GpuSurvey& survey, std::optional<int> expectedGpus) {
  HealthCheckResult result{"gpu count", Verdict::Passed, gpuCountVerdictDetail(survey, expectedGpus)};
  if (expectedGpus && survey.count < *expectedGpus) {
    result.verdict = Verdict::Failed;
    result.detail = "this node sees " + gpuCountVerdictDetail(survey, expectedGpus) +
                    (survey.unavailable.empty() ? "" : " (" + survey.unavailable + ")");
  } else if (!survey.unavailable.empty()) {
    result.verdict = Verdict::Skipped;
    result.detail = survey.unavailable;
  }
  return result;
}

// One check over every GPU: failed where any GPU is bad (each named), skipped where none
// reported it, else passed (saying on how many GPUs it could not be read, and why).
HealthCheckResult perGpuVerdict(const std::string& name, const GpuSurvey& survey, Reading reading) {
  if (!survey.unavailable.empty()) return {name, Verdict::Skipped, survey.unavailable};
  if (survey.gpus.empty()) return {name, Verdict::Skipped, "no GPU on this node"};
  std::string bad, unsupported;
  int unsupportedCount = 0;
  for (const GpuObservation& gpu : survey.gpus) {
    const GpuReading& value = gpu.*reading;
    const std::string which = "GPU " + std::to_string(gpu.index) + ": " + value.detail;
    if (value.state == State::Bad) bad += (bad.empty() ? "" : ", ") + which;
    if (value.state == State::Unsupported && unsupportedCount++ == 0) unsupported = which;
  }
  if (!bad.empty()) return {name, Verdict::Failed, bad};
  const int count = static_cast<int>(survey.gpus.size());
  if (unsupportedCount == count) {
    return {name, Verdict::Skipped, count == 1 ? unsupported : "on every GPU (" + unsupported + ")"};
  }
  std::string detail = std::to_string(count - unsupportedCount) + " GPU(s) fine";
  if (unsupportedCount > 0) detail += ", " + std::to_string(unsupportedCount) + " not read (" + unsupported + ")";
  return {name, Verdict::Passed, detail};
}

// PLTRUN_FAKE_GPU_HEALTH's word for one GPU, applied to its observation.
void applyFakeWord(GpuObservation& gpu, const std::string& word) {
  const GpuReading notReported{State::Unsupported, "PLTRUN_FAKE_GPU_HEALTH: not reported"};
  if (word == "lost") {
    gpu.lost = {State::Bad, "lost, fallen off the bus"};
    gpu.recovery = gpu.ecc = gpu.retired = {State::Unsupported, "the GPU is lost"};
  } else if (word == "recovery") {
    gpu.recovery = {State::Bad, "recovery action: reset the GPU"};
  } else if (word == "ecc") {
    gpu.ecc = {State::Bad, "1 uncorrectable ECC error(s) since the driver loaded"};
  } else if (word == "retired") {
    gpu.retired = {State::Bad, "retired pages pending (a reset retires them)"};
  } else if (word == "remap") {
    gpu.retired = {State::Bad, "row remapping failed"};
  } else if (word == "unsupported") {
    gpu.recovery = gpu.ecc = gpu.retired = notReported;
  } else {
    throw Error(ErrorCode::InvalidArgument, "PLTRUN_FAKE_GPU_HEALTH: '" + word +
                                                "' is no GPU state; expected INDEX=lost, recovery, ecc, retired, "
                                                "remap or unsupported, as 1=lost,2=recovery");
  }
}

std::optional<std::string> variable(const Environment& env, const char* name) {
  auto found = env.find(name);
  if (found == env.end()) return std::nullopt;
  return found->second;
}

}  // namespace

std::vector<HealthCheckResult> gpuVerdicts(const GpuSurvey& survey, std::optional<int> expectedGpus) {
  return {gpuCountVerdict(survey, expectedGpus), perGpuVerdict("gpu lost", survey, &GpuObservation::lost),
          perGpuVerdict("recovery action", survey, &GpuObservation::recovery),
          perGpuVerdict("ecc", survey, &GpuObservation::ecc),
          perGpuVerdict("retired pages", survey, &GpuObservation::retired)};
}

GpuSurvey fakeGpuSurvey(int count, const std::string& health) {
  GpuSurvey survey;
  survey.count = count;
  for (int index = 0; index < count; ++index) survey.gpus.push_back(GpuObservation{index, {}, {}, {}, {}});
  for (std::string_view entry : splitText(health, ',')) {
    entry = trimSpaces(entry);
    if (entry.empty()) continue;
    const size_t equals = entry.find('=');
    const auto index = parseInteger(entry.substr(0, equals));
    if (equals == std::string_view::npos || !index || *index < 0 || *index >= count) {
      throw Error(ErrorCode::InvalidArgument, "PLTRUN_FAKE_GPU_HEALTH: '" + std::string(entry) +
                                                  "' names no GPU of the " + std::to_string(count) +
                                                  " PLTRUN_FAKE_GPUS has; expected INDEX=STATE, as 1=lost");
    }
    applyFakeWord(survey.gpus[static_cast<size_t>(*index)], std::string(trimSpaces(entry.substr(equals + 1))));
  }
  return survey;
}

GpuSurvey surveyGpus(const Environment& inherited) {
  const std::optional<std::string> fakeCount = variable(inherited, "PLTRUN_FAKE_GPUS");
  const std::optional<std::string> fakeHealth = variable(inherited, "PLTRUN_FAKE_GPU_HEALTH");
  if (!fakeCount && !fakeHealth) return surveyGpusWithNvml();
  const auto count = fakeCount ? parseInteger(*fakeCount) : std::optional<long long>(0);
  return fakeGpuSurvey(count && *count >= 0 ? static_cast<int>(*count) : 0, fakeHealth.value_or(""));
}

std::vector<HealthCheckResult> gpuHealthChecks(std::optional<int> expectedGpus, const Environment& inherited) {
  return gpuVerdicts(surveyGpus(inherited), expectedGpus);
}

}  // namespace pltrun

#include "launcher/health/job_health.h"

#include "launcher/plan/text_parsing.h"

namespace pltrun {

HealthCheckOptions healthOptionsFor(const LaunchConfig& config, const WorkerLayout& layout) {
  HealthCheckOptions options;
  options.command = config.healthCheck;
  options.timeout = config.healthCheckTimeout;
  options.recheckInterval = config.healthCheckInterval;
  if (layout.cudaVisibleDevices) {
    // --devices: exactly those; "" hides every GPU.
    if (!layout.cudaVisibleDevices->empty()) {
      options.expectedGpus = static_cast<int>(splitText(*layout.cudaVisibleDevices, ',').size());
    }
  } else if ((config.nprocPerNode && config.nprocPerNode->kind == WorkerCount::Kind::Gpu) || config.autoSelectGpus) {
    options.expectedGpus = layout.workerCount;  // one GPU per worker (auto may mean CPUs: none expected)
  }
  return options;
}

bool checksHealthBeforeLaunch(const LaunchConfig& config, const Environment& inherited) {
  const bool spansNodes =
      config.nnodes > 1 || config.rdzv.maxNodes > 1 || config.rdzv.backend == RendezvousBackend::Etcd;
  return spansNodes || !config.healthCheck.empty() || layoutNeedsGpus(config.nprocPerNode, config.devices) ||
         config.autoSelectGpus || inherited.count("PLTRUN_FAKE_GPU_HEALTH") != 0;
}

std::string checkLine(const HealthCheckResult& check) {
  const char* verdict = check.verdict == HealthCheckResult::Verdict::Passed   ? "passed"
                        : check.verdict == HealthCheckResult::Verdict::Failed ? "FAILED"
                                                                              : "skipped";
  return check.name + ": " + verdict + (check.detail.empty() ? "" : " (" + check.detail + ")");
}

nlohmann::json unhealthyEventFields(const std::string& node, const NodeHealth& health) {
  return {{"node", node}, {"reason", health.reason()}, {"checks", health.toJson()["checks"]}};
}

nlohmann::json unhealthyFailureReport(const std::string& node, const NodeHealth& health, int schema) {
  return {{"schema", schema},
          {"root_cause", nullptr},
          {"others", nlohmann::json::array()},
          {"excluded_nodes", {{{"node", node}, {"kind", "unhealthy"}, {"reason", health.reason()}}}}};
}

}  // namespace pltrun

#include "launcher/metrics/metrics_endpoint.h"

#include <spdlog/spdlog.h>

#include "base/terminal_text.h"
#include "launcher/group/resolved_job.h"
#include "pltrun/error.h"

namespace pltrun {

// The run id is checked (checkRunId) and node_name= too, but a host name is the system's and a
// driver's node name its host list's: Prometheus refuses a whole scrape over one label value
// that is not UTF-8, so such bytes are shown as \xNN (the format's escapes come later).
MetricsIdentity metricsIdentity(const ResolvedJob& job, const std::string& host) {
  return {job.runId, terminalSafeLine(job.config.rdzv.nodeName.empty() ? host : job.config.rdzv.nodeName)};
}

std::unique_ptr<MetricsServer> serveMetrics(const std::optional<Endpoint>& endpoint, const MetricsRecorder& recorder) {
  if (!endpoint) return nullptr;
  try {
    auto server = std::make_unique<MetricsServer>(
        *endpoint, [&recorder] { return recorder.scrape(MetricsRecorder::Clock::now()); });
    spdlog::info("metrics at http://{}/metrics", endpointText(server->listening()));
    return server;
  } catch (const Error& error) {
    spdlog::warn("{}; the job runs without metrics", error.what());
    return nullptr;
  }
}

}  // namespace pltrun

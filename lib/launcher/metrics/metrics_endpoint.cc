#include "launcher/metrics/metrics_endpoint.h"

#include <spdlog/spdlog.h>

namespace pltrun {

std::unique_ptr<MetricsServer> serveMetrics(const std::optional<Endpoint>& endpoint, const MetricsRecorder& recorder) {
  if (!endpoint) return nullptr;
  auto server = std::make_unique<MetricsServer>(*endpoint,
                                                [&recorder] { return recorder.scrape(MetricsRecorder::Clock::now()); });
  spdlog::info("metrics at http://{}/metrics", endpointText(server->listening()));
  return server;
}

}  // namespace pltrun

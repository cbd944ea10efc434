#include "launcher/driver/unhealthy_hosts.h"

#include <spdlog/spdlog.h>

#include "launcher/output/event_log.h"
#include "launcher/output/run_directory.h"
#include "launcher/plan/text_parsing.h"

namespace pltrun {
namespace {

// failure.json and events.jsonl in the run's directory (--log-dir; -r/-t make one too);
// the report's path, or empty when logs are not kept.
std::string writeRunFiles(const LaunchConfig& config, const std::string& runId,
                          const std::vector<HostHealth>& unhealthy) {
  const RunDirectory directory(config, runId);
  if (!directory.keepsLogs()) return "";
  EventLog events(directory.eventLog());
  for (const HostHealth& host : unhealthy) {
    events.write("node_unhealthy", {{"node", host.host}, {"reason", host.reason}, {"checks", host.checks}});
  }
  events.write("job_finished", {{"status", kUnhealthyHostsStatus}});
  const RunFile report = directory.failureReport();
  const std::string json =
      unhealthyHostsReport(unhealthy).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  return report.write(json + "\n") ? report.path() : "";
}

}  // namespace

nlohmann::json unhealthyHostsReport(const std::vector<HostHealth>& unhealthy) {
  nlohmann::json document = {{"schema", kEventSchema},
                             {"root_cause", nullptr},
                             {"others", nlohmann::json::array()},
                             {"excluded_nodes", nlohmann::json::array()}};
  for (const HostHealth& host : unhealthy) {
    document["excluded_nodes"].push_back({{"node", host.host}, {"kind", "unhealthy"}, {"reason", host.reason}});
  }
  return document;
}

int refuseUnhealthyHosts(const LaunchConfig& config, const std::string& runId, const std::vector<HostHealth>& hosts) {
  std::vector<HostHealth> unhealthy;
  for (const HostHealth& host : hosts) {
    if (!host.healthy) unhealthy.push_back(host);
  }
  const std::string counted = countedNoun(static_cast<long long>(hosts.size()), "host");
  if (unhealthy.empty()) {
    spdlog::info("health check passed on {}", hosts.size() == 1 ? "the host" : "all " + counted);
    return 0;
  }
  spdlog::error("the job was not started: {} of {} failed the health check:", unhealthy.size(), counted);
  for (const HostHealth& host : unhealthy) spdlog::error("  {}: {}", host.host, host.reason);
  if (const std::string report = writeRunFiles(config, runId, unhealthy); !report.empty()) {
    spdlog::error("  report: {}", report);
  }
  return kUnhealthyHostsStatus;
}

}  // namespace pltrun

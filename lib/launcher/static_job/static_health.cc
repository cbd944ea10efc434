#include "launcher/static_job/static_health.h"

#include <spdlog/spdlog.h>

#include "launcher/health/job_health.h"
#include "launcher/output/event_log.h"

namespace pltrun {

std::optional<int> refuseIfUnhealthy(const ResolvedJob& job, const RunDirectory& directory, const std::string& host) {
  if (!checksHealthBeforeLaunch(job.config, job.inherited)) return std::nullopt;
  const NodeHealth health = checkNodeHealth(healthOptionsFor(job.config, job.layout), job.inherited);
  for (const HealthCheckResult& check : health.checks) spdlog::debug("health check {}", checkLine(check));
  if (health.healthy()) return std::nullopt;
  spdlog::error("this node ({}) is unhealthy, so the job does not start: {}", host, health.reason());
  EventLog events(directory.eventLog());
  events.write("node_unhealthy", unhealthyEventFields(host, health));
  events.write("job_finished", {{"status", kUnhealthyExitStatus}});
  if (const RunFile report = directory.failureReport()) {
    report.write(unhealthyFailureReport(host, health, kEventSchema)
                     .dump(2, ' ', false, nlohmann::json::error_handler_t::replace) +
                 "\n");
  }
  return kUnhealthyExitStatus;
}

}  // namespace pltrun

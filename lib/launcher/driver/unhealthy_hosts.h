#pragma once
// What the driver does when hosts fail their health check (host_health.h): it starts
// nothing, and says so once for all of them, so that one run finds every bad host rather
// than one per try: a line naming how many, then one line per unhealthy host (HOST: why),
// failure.json's "excluded_nodes" (each {"node", "kind": "unhealthy", "reason"}) and a
// node_unhealthy event per host in the run's directory when logs are kept (docs/EVENTS.md).

#include <string>
#include <vector>

#include "launcher/driver/host_health.h"
#include "launcher/plan/launch_config.h"

namespace pltrun {

/// pltrun's exit status when the job was not started because of unhealthy hosts, as
/// `pltrun health`'s for an unhealthy node.
constexpr int kUnhealthyHostsStatus = 1;

/// The failure.json of a job refused for `unhealthy` hosts (root_cause null, others empty).
nlohmann::json unhealthyHostsReport(const std::vector<HostHealth>& unhealthy);

/// When any host of `hosts` is unhealthy: the lines, failure.json and events above, and
/// kUnhealthyHostsStatus. Otherwise one line that every host passed, and 0.
int refuseUnhealthyHosts(const LaunchConfig& config, const std::string& runId, const std::vector<HostHealth>& hosts);

}  // namespace pltrun

#pragma once
// An elastic agent's health gate (issue 46): before it joins each round, this node's checks
// run (health/node_health.h). An unhealthy node does not join: it says why in one line,
// writes node_unhealthy, appends an exclusions line (kind "unhealthy") to the store for
// `pltrun status`, and checks again every --health-check-interval; the job forms without
// it while --nnodes' minimum allows (a waiting spare takes its place). Once healthy it
// says so (node_healthy, an exclusions line with excluded false) and joins.

#include <functional>
#include <optional>

#include "launcher/agent/rendezvous_connection.h"
#include "launcher/group/resolved_job.h"
#include "launcher/health/node_health.h"
#include "launcher/output/event_log.h"

namespace pltrun {

/// The exit status of an agent that stayed out of the job, unhealthy, until it ended.
constexpr int kUnhealthyAgentStatus = 1;

class HealthGate {
 public:
  HealthGate(const ResolvedJob& job, RendezvousConnection& connection, EventLog& events);

  /// Returns once this node is healthy (at once where the job runs no checks). While it
  /// waits, `betweenWaits` runs every fraction of a second (it may throw to stop). When the
  /// job ends without this node (or its store goes), returns the agent's exit status.
  std::optional<int> waitUntilHealthy(const std::function<void()>& betweenWaits);

 private:
  void reportUnhealthy(const NodeHealth& health);
  void reportHealthy();
  void recordExclusion(bool excluded, const std::string& reason);
  bool waitForRecheck(const std::function<void()>& betweenWaits);
  bool jobEnded();

  const ResolvedJob& job_;
  RendezvousConnection& connection_;
  EventLog& events_;
  const bool enabled_;
  HealthCheckOptions options_;
  bool excluded_ = false;   ///< its last exclusions line says excluded
  std::string lastReason_;  ///< said once per change, not at every recheck
};

}  // namespace pltrun

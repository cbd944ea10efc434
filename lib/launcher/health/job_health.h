#pragma once
// A job's health options (node_health.h) from its flags, and when a launch runs the checks
// at all: a one-node job on CPUs with no --health-check skips them, so that loading NVML
// costs nothing where no GPU and no other node is involved (docs/PERFORMANCE.md, launch).

#include "launcher/health/node_health.h"
#include "launcher/placement/worker_layout.h"
#include "launcher/plan/launch_config.h"

namespace pltrun {

/// --health-check, --health-check-timeout, --health-check-interval, and the GPUs the job's
/// layout places its workers on (expectedGpus; none when it places none).
HealthCheckOptions healthOptionsFor(const LaunchConfig& config, const WorkerLayout& layout);

/// Whether this node checks its health before the job starts (or before each round): when
/// the job uses GPUs, spans nodes, has a --health-check, or PLTRUN_FAKE_GPU_HEALTH is set.
bool checksHealthBeforeLaunch(const LaunchConfig& config, const Environment& inherited);

/// One line per check, for the log and `pltrun health`: "ecc: skipped (not supported ...)".
std::string checkLine(const HealthCheckResult& check);

/// The node_unhealthy event's fields: node, reason, checks (NodeHealth::toJson's).
nlohmann::json unhealthyEventFields(const std::string& node, const NodeHealth& health);

/// failure.json of a job that did not start because this node is unhealthy: no root cause,
/// and this node in "excluded_nodes" (docs/EVENTS.md).
nlohmann::json unhealthyFailureReport(const std::string& node, const NodeHealth& health, int schema);

}  // namespace pltrun

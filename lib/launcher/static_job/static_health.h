#pragma once
// A static job's health gate (issue 46): before any worker starts, this node's checks
// (health/node_health.h) run; an unhealthy node does not start the job, saying why in one
// line, in events.jsonl (node_unhealthy) and in failure.json (excluded_nodes).

#include <optional>
#include <string>

#include "launcher/group/resolved_job.h"
#include "launcher/output/run_directory.h"

namespace pltrun {

/// The exit status of a job this node refuses to start: its health checks failed.
constexpr int kUnhealthyExitStatus = 1;

/// Runs the checks where the job asks for them (checksHealthBeforeLaunch); returns
/// kUnhealthyExitStatus after reporting an unhealthy node, none when the job may start.
std::optional<int> refuseIfUnhealthy(const ResolvedJob& job, const RunDirectory& directory, const std::string& host);

}  // namespace pltrun

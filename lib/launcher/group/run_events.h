#pragma once
// The events of events.jsonl (docs/EVENTS.md) that a single node's supervisor and an
// elastic agent share: run_started, then worker_started, worker_exited and stall_detected,
// each with the attempt's own fields ({"attempt": N} or {"round": N}).

#include <nlohmann/json.hpp>
#include <string>

#include "launcher/group/worker_group.h"
#include "launcher/output/event_log.h"
#include "launcher/plan/launch_config.h"

namespace pltrun {

/// run_started's fields: the run id and its directory (a later run with the same id gets a
/// new one), this host, its worker count, the program and pltrun's version.
nlohmann::json runStartedFields(const LaunchConfig& config, const std::string& runId, const std::string& directory,
                                const std::string& host, int workers);

/// Sets `group`'s observers to write those events to `events`, which must outlive the group.
void recordWorkerEvents(GroupSettings& group, EventLog& events, const nlohmann::json& attemptFields);

}  // namespace pltrun

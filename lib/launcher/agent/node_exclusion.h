#pragma once
// What an elastic agent does with the job's exclusions key (store_layout.h, issue 46): names
// this node as the key does, appends a line when this node is kept out, reads the nodes kept
// out when the job fails for want of nodes, and writes that failure.json, which has no
// worker of this node to name.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "launcher/agent/node_blame.h"
#include "launcher/agent/rendezvous_connection.h"
#include "launcher/output/event_log.h"
#include "launcher/output/run_directory.h"
#include "rendezvous/elastic/node_exclusions.h"

namespace pltrun {

/// The name this node has in the exclusions key: its node_name= when it was given one (the
/// name the job expects it under), else its host name.
std::string exclusionName(const RendezvousConnection& connection);

/// Appends `exclusion` (its time now) to the job's exclusions key; a store that refuses is
/// said in a warning, and the job goes on.
void appendExclusion(RendezvousConnection& connection, const rdzv::NodeExclusion& exclusion);

/// The nodes the job keeps out now; none when the key is missing or the store does not answer.
std::vector<rdzv::NodeExclusion> readExcludedNodes(RendezvousConnection& connection);

/// Whether another node of `info`'s round published that its workers failed on their own
/// (rR/state/I "failed"): then the round's failure is not this node's alone. Read within a
/// second; a store that does not answer says no.
bool otherNodesFailed(RendezvousConnection& connection, const rdzv::RoundInfo& info);

/// This node, blamed by `blame` for rounds up to `round` of run `runId`, is excluded: one
/// line, the node_excluded event, and its line in the exclusions key (kind "blamed").
void excludeThisNode(RendezvousConnection& connection, EventLog& events, const std::string& runId,
                     const NodeBlame& blame, int round);

/// The job failed for want of nodes: the nodes it keeps out, and why, one line each and in
/// `failureReport`'s excluded_nodes. Nothing when it keeps none out.
void reportExcludedNodes(RendezvousConnection& connection, const RunFile& failureReport);

/// failure.json of a job that ended without a worker failure on this node to name: a null
/// root cause, no others, and `fields` (no_progress, excluded_nodes...). Nothing without a file.
void writeFailureWithoutRootCause(const RunFile& file, const nlohmann::json& fields);

}  // namespace pltrun

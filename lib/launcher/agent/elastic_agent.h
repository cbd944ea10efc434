#pragma once
// One node of an elastic multi-node job (--rdzv-backend c10d or etcd): meets the other agents in
// rendezvous rounds, runs this node's workers for each round, and re-forms the job when a
// worker fails anywhere, an agent is lost, or a node joins; ends when every node's workers
// have succeeded, when --max-restarts is spent, or when too few nodes come.

#include "launcher/group/resolved_job.h"

namespace pltrun {

/// Runs this node's part of the job; returns pltrun's exit status.
int runElasticAgent(const ResolvedJob& job);

struct AgentSession;
/// The same over a session already made (the unit tests make one over fakes).
int runElasticAgent(AgentSession& session);

}  // namespace pltrun

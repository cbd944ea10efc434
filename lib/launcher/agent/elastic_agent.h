#pragma once
// One node of an elastic multi-node job (--rdzv-backend c10d or etcd): meets the other agents in
// rendezvous rounds, runs this node's workers for each round, and re-forms the job when a
// worker fails anywhere, an agent is lost, or a node joins; ends when every node's workers
// have succeeded, when --max-restarts is spent, or when too few nodes come.

#include <string>

#include "launcher/placement/worker_layout.h"
#include "launcher/plan/launch_config.h"
#include "launcher/plan/program_command.h"
#include "launcher/plan/worker_env.h"

namespace pltrun {

/// What runLauncher resolved before choosing the elastic agent.
struct ElasticJob {
  const LaunchConfig& config;
  const Environment& inherited;
  ProgramCommand command;
  WorkerLayout layout;
  std::string runId;
};

/// Runs this node's part of the job; returns pltrun's exit status.
int runElasticAgent(const ElasticJob& job);

struct AgentSession;
/// The same over a session already made (the unit tests make one over fakes).
int runElasticAgent(AgentSession& session);

}  // namespace pltrun

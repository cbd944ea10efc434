#pragma once
// From what is fixed for a whole run (the resolved job, where it runs) to the workers of
// one attempt: their environment, console prefix, output routes and error file.

#include <string>
#include <vector>

#include "launcher/group/resolved_job.h"
#include "launcher/group/supervision_files.h"
#include "launcher/group/worker_group.h"
#include "launcher/output/run_directory.h"
#include "launcher/plan/launch_config.h"

namespace pltrun {

/// The resolved job and what running it on this node adds: where its files go, the host's
/// name, the supervision files.
struct RunPlan {
  const ResolvedJob& job;
  const RunDirectory& directory;
  std::string host;
  /// Heartbeat sockets, stack files, the Python hook; none in unit tests.
  const SupervisionFiles* supervision = nullptr;
  /// TORCHELASTIC_TIMER_FILE, when torch's FileTimer is served; empty otherwise.
  std::string timerFile;
};

/// This node's place in the job for one attempt: from the flags (static), or from the
/// rendezvous round (elastic).
struct NodePlacement {
  int nodeRank = 0;
  int nnodes = 1;
  int worldSize = 0;   ///< 0: every node runs as many workers as this one
  int firstRank = -1;  ///< -1: nodeRank * workers per node
  std::string masterAddr;
  int masterPort = 0;
  bool useAgentStore = false;
};

/// The workers of attempt `attempt` placed as `node` says.
std::vector<WorkerSpec> workerSpecsFor(const RunPlan& plan, int attempt, const NodePlacement& node);

/// A static job's placement, from the flags alone; the master port is left to each
/// attempt's store (attempt_store.h).
NodePlacement staticPlacement(const LaunchConfig& config);

}  // namespace pltrun

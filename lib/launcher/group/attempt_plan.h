#pragma once
// From what is fixed for a whole run (the resolved job, where it runs) to the workers of
// one attempt: their environment, console prefix, output routes and error file.

#include <optional>
#include <string>
#include <vector>

#include "launcher/group/resolved_job.h"
#include "launcher/group/supervision_files.h"
#include "launcher/group/worker_group.h"
#include "launcher/output/run_directory.h"
#include "launcher/plan/launch_config.h"
#include "launcher/process/zygote.h"

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

/// The --preload zygote of this node, none unless the job asks for one: the workers'
/// interpreter and argv, the environment every worker of every attempt shares (known before
/// the node's place in the job: an elastic agent starts it while it waits to join), and the
/// orphan guard's pipe `guardFd`.
std::optional<ZygoteSettings> zygoteSettingsFor(const RunPlan& plan, int guardFd);

/// A static job's placement, from the flags alone; the master port is left to each
/// attempt's store (attempt_store.h).
NodePlacement staticPlacement(const LaunchConfig& config);

}  // namespace pltrun

#pragma once
// From what is fixed for a whole run (program, layout, run id, store) to the workers of
// one attempt: their environment, console prefix, output routes and error file.

#include <string>
#include <vector>

#include "launcher/launch_config.h"
#include "launcher/program_command.h"
#include "launcher/run_directory.h"
#include "launcher/worker_env.h"
#include "launcher/worker_group.h"
#include "launcher/worker_layout.h"

namespace pltrun {

struct RunPlan {
  const LaunchConfig& config;
  const Environment& inherited;
  const RunDirectory& directory;
  ProgramCommand command;
  WorkerLayout layout;
  std::string runId;
  std::string host;
  int agentStorePort = 0;  ///< the launcher's store for the workers; 0 when there is none
};

/// The workers of attempt `attempt` (0 first, N for the N-th restart). Without an agent
/// store and a given --master-port, each attempt gets a fresh free port.
std::vector<WorkerSpec> workerSpecsForAttempt(const RunPlan& plan, int attempt);

}  // namespace pltrun

#pragma once
// What the launcher resolved on this node before it picked a mode, fixed for the whole run:
// the static job and the elastic agent both take it, and every attempt's (or round's)
// workers are made from it (attempt_plan.h).

#include <string>

#include "launcher/placement/worker_layout.h"
#include "launcher/plan/launch_config.h"
#include "launcher/plan/program_command.h"
#include "launcher/plan/worker_env.h"

namespace pltrun {

struct ResolvedJob {
  const LaunchConfig& config;
  /// The environment the workers inherit (with -x and --env-file applied).
  const Environment& inherited;
  ProgramCommand command;
  WorkerLayout layout;
  /// The id every node of the job shares ("none" by default on several nodes).
  std::string runId;
};

}  // namespace pltrun

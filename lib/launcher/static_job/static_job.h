#pragma once
// A static job on this node (one node, or one of the --nnodes N of a static multi-node job):
// its run directory, the supervision files where something reads them, and its attempts,
// which the supervisor runs until one succeeds or --max-restarts is spent.

#include <string>

#include "launcher/placement/worker_layout.h"
#include "launcher/plan/launch_config.h"
#include "launcher/plan/program_command.h"
#include "launcher/plan/worker_env.h"

namespace pltrun {

/// Runs the job's workers on this node (restarting them as --max-restarts allows) and
/// returns pltrun's exit status.
int runStaticJob(const LaunchConfig& config, const Environment& inherited, const ProgramCommand& command,
                 const WorkerLayout& layout, const std::string& runId);

}  // namespace pltrun

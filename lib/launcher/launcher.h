#pragma once
// The launcher: from a validated LaunchConfig to the mode that runs it (a static job on this
// node, an elastic agent, or the multi-host driver). For a mode on this node it first
// resolves the program (plan/program_command.h, over the real file system) and asks
// placement (placement/node_placement.h) where the workers run; it decides no placement
// itself.

#include "launcher/plan/launch_config.h"

namespace pltrun {

/// Runs the job on this node and returns pltrun's exit status. Throws Error for problems
/// found before any worker starts (missing program: NotFound; impossible flags:
/// InvalidArgument).
int runLauncher(const LaunchConfig& config);

}  // namespace pltrun

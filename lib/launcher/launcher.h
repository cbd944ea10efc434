#pragma once
// The launcher: from a validated LaunchConfig to the mode that runs it (a static job on this
// node, an elastic agent, or the multi-host driver).

#include "launcher/plan/launch_config.h"

namespace pltrun {

/// Runs the job on this node and returns pltrun's exit status. Throws Error for problems
/// found before any worker starts (missing program: NotFound; impossible flags:
/// InvalidArgument).
int runLauncher(const LaunchConfig& config);

}  // namespace pltrun

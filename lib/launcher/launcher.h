#pragma once
// The single-node launcher: from a validated LaunchConfig to a supervised worker group.

#include "launcher/plan/launch_config.h"

namespace pltrun {

/// Runs the job on this node and returns pltrun's exit status. Throws Error for problems
/// found before any worker starts (missing program: NotFound; impossible flags:
/// InvalidArgument).
int runLauncher(const LaunchConfig& config);

}  // namespace pltrun

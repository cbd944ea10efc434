#pragma once
// A static job on this node (one node, or one of the --nnodes N of a static multi-node job):
// its run directory, the supervision files where something reads them, and its attempts,
// which the supervisor runs until one succeeds or --max-restarts is spent.

#include "launcher/group/resolved_job.h"

namespace pltrun {

/// Runs the job's workers on this node (restarting them as --max-restarts allows) and
/// returns pltrun's exit status.
int runStaticJob(const ResolvedJob& job);

}  // namespace pltrun

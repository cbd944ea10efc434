#pragma once
// One command, many hosts: with --hosts or --hostfile this pltrun is the driver. It hosts
// the rendezvous store on the address the hosts reach it at, starts one pltrun agent per
// host (ssh, or a --remote-command template such as pdsh or kubectl exec) with the
// environment the job needs, streams every host's output back with "[HOST] " before the
// agent's own "[rank N] ", and ends like a single-node run: the failing host's report and
// its exit status. Ctrl-C or a failure stops every host; an agent whose connection drops
// stops its workers (it runs with --exit-with-parent).

#include <string>
#include <vector>

#include "launcher/plan/launch_config.h"
#include "launcher/plan/worker_env.h"

namespace pltrun {

/// Runs the job on every host; returns pltrun's exit status.
int runDriver(const LaunchConfig& config, const Environment& inherited);

}  // namespace pltrun

#pragma once
// `pltrun health [--health-check CMD] [--health-check-timeout S] [--expected-gpus N] [--json]`:
// this node's health checks alone (node_health.h), each check's verdict on a line (with
// --json: NodeHealth::toJson() on one line, which the multi-host driver reads). Exit status:
// 0 healthy, 1 unhealthy, 2 a usage error. --health-check and --health-check-timeout default
// to the site config's (/etc/pltrun.toml), as a job's do.

#include "launcher/plan/worker_env.h"

namespace pltrun {

/// True when argv asks for the health subcommand (`pltrun health ...`).
bool isHealthCommand(int argc, const char* const* argv);

/// Runs `pltrun health`: argv is pltrun's own. Returns the exit status.
int runHealthCommand(int argc, const char* const* argv, const Environment& env);

}  // namespace pltrun

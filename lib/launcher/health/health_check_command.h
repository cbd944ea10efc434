#pragma once
// The site's own health check (--health-check CMD): run by /bin/sh -c in a process group
// of its own, with the node's environment, for at most the timeout (then the whole group is
// killed, and the check fails). Exit status 0 is healthy; its last lines of output (stdout
// and stderr together) are the check's detail either way.

#include "launcher/health/node_health.h"

namespace pltrun {

/// How many of the command's last lines the detail keeps, and at most how many bytes.
constexpr size_t kHealthCheckTailLines = 5;
constexpr size_t kHealthCheckTailBytes = 1000;

/// The "health-check" check: options.command run once, within options.timeout.
HealthCheckResult runHealthCheckCommand(const HealthCheckOptions& options, const Environment& inherited);

/// Pure: the last `kHealthCheckTailLines` non-empty lines of `output`, joined by " | ", cut to
/// kHealthCheckTailBytes (from the front: the end says most).
std::string outputTail(const std::string& output);

}  // namespace pltrun

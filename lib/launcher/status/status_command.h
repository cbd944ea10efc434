#pragma once
// `pltrun status --rdzv-endpoint HOST:PORT --rdzv-id ID [--json] [--watch [SECONDS]]`: a
// live or finished elastic job's state, read from its rendezvous store alone (no daemon of
// its own, nothing written). Exit status: 0 healthy, 1 waiting or degraded, 2 failed or
// unknown (docs/USAGE.md, "pltrun status"; the JSON schema in docs/STATUS.md).

#include "launcher/plan/worker_env.h"

namespace pltrun {

/// True when argv asks for the status subcommand (`pltrun status ...`).
bool isStatusCommand(int argc, const char* const* argv);

/// Runs `pltrun status`: argv is pltrun's own. Returns the exit status; a bad flag, a store
/// that does not answer or refuses us is one line on stderr and status 2.
int runStatusCommand(int argc, const char* const* argv, const Environment& env);

}  // namespace pltrun

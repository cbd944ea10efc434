#pragma once
// Which variables the driver passes to every host's agent (agent_stdin.h says how): the
// driver's own, for the prefixes jobs tune (NCCL_, CUDA_, ...), DeepSpeed's env files, and
// what -x and --env-file name (plan/exported_variables.h reads those).

#include "launcher/plan/launch_config.h"
#include "launcher/plan/worker_env.h"

namespace pltrun {

/// The variables passed to every remote agent: those of `inherited` whose names start with
/// a forwarded prefix (NCCL_, CUDA_ but CUDA_VISIBLE_DEVICES, PYTHON, OMP_, TORCH_, GLOO_,
/// UCX_, FI_, MKL_, HF_), then DeepSpeed's ~/.deepspeed_env and ./.deepspeed_env where they
/// exist ($DS_ENV_FILE renames them), then -x NAME (its value here) or -x NAME=VALUE, then the
/// env file's KEY=VALUE lines. Throws Error(InvalidArgument) for an -x NAME that is not set
/// here, or a malformed env file line.
Environment forwardedEnvironment(const Environment& inherited, const RemoteLaunchSettings& remote);

}  // namespace pltrun

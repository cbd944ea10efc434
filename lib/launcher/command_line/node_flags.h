#pragma once
// Where this node sits in the job, from the flags' text: --nnodes, --node-rank, the static
// rendezvous (--master-addr, --master-port) and the c10d one (--rdzv-backend,
// --rdzv-endpoint, --rdzv-conf, --local-addr), and Slurm's variables standing in for them.
// Pure: the environment is an argument.

#include "launcher/command_line/raw_flags.h"
#include "launcher/plan/launch_config.h"
#include "launcher/plan/worker_env.h"

namespace pltrun {

/// In a Slurm job (Slurm's variables in `env`), with no node flag given and not started by a
/// worker: fills the node flags of `raw` from the step, the run id from the job id,
/// config.slurmSummary with what was detected, and config.slurmSignalReach from slurm.conf
/// (read through `readFile`). Throws Error(InvalidArgument) for slurmMisuse()'s mistakes.
void applySlurmDefaults(RawFlags& raw, LaunchConfig& config, const Environment& env, const FileReader& readFile);

/// Checks the node and rendezvous flags and sets them on `config`; the secret file comes
/// from PLTRUN_SECRET_FILE in `env` when --rdzv-conf names none. Throws the one-line
/// Error(InvalidArgument) of the first flag that is wrong.
void applyNodeFlags(const RawFlags& raw, LaunchConfig& config, const Environment& env);

}  // namespace pltrun

#pragma once
// Under srun, Slurm's slurmstepd delivers the signals of `scancel --signal`, `srun --signal`
// and a job's end itself, to the processes its process tracking plugin (ProctrackType) knows:
// with proctrack/pgid only the task's process group (pltrun, not its workers, which have
// groups of their own), with proctrack/linuxproc every descendant of the task, with
// proctrack/cgroup every process in the task's cgroup. pltrun passes on a signal from
// slurmstepd only where Slurm has not delivered it to the workers already, so that a
// worker's SIGUSR1 handler (Lightning's requeue) runs once.

#include <optional>
#include <string>

#include "launcher/plan/file_reader.h"
#include "launcher/plan/worker_env.h"

namespace pltrun {

enum class SlurmSignalReach {
  TaskGroup,    ///< proctrack/pgid, or not known: the task's process group only
  Descendants,  ///< proctrack/linuxproc (and job containers such as cray_aries): every descendant
  TaskCgroups,  ///< proctrack/cgroup: the processes in the task's own cgroup (not in cgroups below it)
};

/// ProctrackType's value in the text of a slurm.conf (keys are case-insensitive; '#' starts a
/// comment); empty when it is not set there (Slurm's default is proctrack/cgroup).
std::optional<std::string> proctrackTypeIn(const std::string& slurmConf);

/// Whether a slurm.conf's text has `Include` lines (settings that are elsewhere).
bool includesOtherFiles(const std::string& slurmConf);

/// What a ProctrackType means for signals; TaskGroup for a plugin not known here, so that
/// pltrun forwards (a signal twice is better than none).
SlurmSignalReach signalReachOf(const std::optional<std::string>& proctrackType);

/// Whether a signal from slurmstepd has reached the workers already: with Descendants, yes;
/// with TaskCgroups only when the workers stay in Slurm's cgroup (pltrun made no job cgroup
/// of its own below it).
bool slurmSignalsReachWorkers(SlurmSignalReach reach, bool workersInJobCgroup);

/// The reach of this node's Slurm: the slurm.conf at $SLURM_CONF (what slurmd gives its tasks
/// in configless setups too), else /etc/slurm/slurm.conf, read through `readFile`. TaskGroup
/// when none can be read, or when ProctrackType is not in it but an `Include` is.
SlurmSignalReach readSlurmSignalReach(const Environment& env, const FileReader& readFile);

}  // namespace pltrun

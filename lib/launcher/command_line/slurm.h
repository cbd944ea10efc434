#pragma once
// Inside a Slurm allocation, `srun --ntasks-per-node=1 pltrun PROGRAM` needs no other flag:
// the node count, this node's rank, the rendezvous endpoint (the first host of the job's
// node list), the run id and the port all come from the variables srun sets.

#include <optional>
#include <string>
#include <vector>

#include "launcher/plan/worker_env.h"

namespace pltrun {

/// Slurm's hostlist grammar: comma-separated names, each with any number of bracket groups
/// of numbers and ranges, zero padding kept: "node[01-04,07],gpu-a[1-2]" -> node01, node02,
/// node03, node04, node07, gpu-a1, gpu-a2; "r[1-2]-n[1-2]" -> r1-n1, r1-n2, r2-n1, r2-n2.
/// Throws Error(InvalidArgument) naming the problem when the text is malformed.
std::vector<std::string> expandHostlist(const std::string& text);

/// The rendezvous port of a Slurm job: 10000 + (job id mod 50000), so two jobs sharing a
/// first node rarely collide and every task of a job agrees without talking; 29400
/// (torchrun's default) when the job id is not a number. --rdzv-endpoint overrides it.
int slurmRendezvousPort(const std::string& jobId);

struct SlurmJob {
  std::string jobId;
  /// Set inside an srun step (SLURM_STEP_ID); empty in the batch script or salloc's shell,
  /// where only the allocation is known and no other node runs pltrun.
  std::optional<std::string> stepId;
  int nnodes = 1;                  ///< the step's nodes (the allocation's outside a step)
  int nodeRank = 0;                ///< this node's index in the step (SLURM_NODEID)
  std::vector<std::string> hosts;  ///< the step's node list, expanded
  int tasks = 1;                   ///< the step's tasks (SLURM_STEP_NUM_TASKS)
  int localTask = 0;               ///< this task's index on its node (SLURM_LOCALID)
  int port = 0;

  bool inStep() const { return stepId.has_value(); }
  /// One line for the log: what was detected and what it means.
  std::string describe() const;
};

/// The job this process belongs to. Inside an srun step the step's own variables count
/// (SLURM_STEP_NODELIST, SLURM_STEP_NUM_NODES, SLURM_STEP_NUM_TASKS), since SLURM_NNODES and
/// SLURM_NODELIST may describe the whole allocation; older spellings are the fallback. Outside
/// a step, the allocation (SLURM_JOB_NUM_NODES, SLURM_JOB_NODELIST). Empty without
/// SLURM_JOB_ID (or SLURM_JOBID). Throws Error(InvalidArgument) when the variables disagree.
std::optional<SlurmJob> detectSlurm(const Environment& env);

/// Why pltrun cannot run as this Slurm task, as one line that says what to do; empty when it
/// can. Two mistakes: several tasks per node (srun --ntasks-per-node=2: pltrun starts the
/// workers itself), and pltrun run straight from the batch script of a multi-node allocation
/// (no srun, so no pltrun on the other nodes).
std::string slurmMisuse(const SlurmJob& job);

}  // namespace pltrun

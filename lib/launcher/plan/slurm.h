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
  int nnodes = 1;
  int nodeRank = 0;
  std::vector<std::string> hosts;  ///< the expanded node list
  int port = 0;

  /// One line for the log: what was detected and what it means.
  std::string describe() const;
};

/// The job this process is a task of, from SLURM_JOB_ID (or SLURM_JOBID), SLURM_NNODES (or
/// SLURM_JOB_NUM_NODES), SLURM_NODEID and SLURM_JOB_NODELIST (or SLURM_NODELIST). Empty
/// outside an srun step (any of them missing). Throws Error(InvalidArgument) when they are
/// present but inconsistent.
std::optional<SlurmJob> detectSlurm(const Environment& env);

}  // namespace pltrun

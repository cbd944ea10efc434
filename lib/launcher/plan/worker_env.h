#pragma once
// The environment of one worker, identical to what torchrun gives its workers
// (docs/USAGE.md lists them) plus Lightning's NODE_RANK, so torchrun-aware code runs unchanged.

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace pltrun {

using Environment = std::map<std::string, std::string>;

/// What the launcher knows about one worker when it starts it.
struct WorkerPlacement {
  int localRank = 0;
  int localWorldSize = 1;  ///< workers on this node
  int nodeRank = 0;        ///< torchrun's group rank
  int nnodes = 1;          ///< torchrun's group world size
  /// Elastic jobs, where nodes may run different worker counts: the job's worker count and
  /// this node's first global rank. 0 / -1: every node runs localWorldSize workers.
  int worldSize = 0;
  int firstRank = -1;
  std::string role = "default";
  std::string masterAddr = "127.0.0.1";
  int masterPort = 0;
  int restartCount = 0;
  int maxRestarts = 0;
  std::string runId;
  std::string errorFile;
  bool useAgentStore = false;
  std::optional<std::string> cudaVisibleDevices;  ///< set only when --devices chose GPUs
  /// torchrun's --virtual-local-rank: LOCAL_RANK=0 and CUDA_VISIBLE_DEVICES naming only this
  /// worker's GPU, so every worker uses device 0.
  bool virtualLocalRank = false;
  /// Supervision (docs/USAGE.md "Hangs"); each empty/0 when unused.
  std::string heartbeatPath;        ///< PLTRUN_HEARTBEAT
  std::string stackFile;            ///< PLTRUN_STACK_FILE
  int stackSignal = 0;              ///< PLTRUN_STACK_SIGNAL
  std::string pythonHookDirectory;  ///< put first on PYTHONPATH
  std::string timerFile;            ///< TORCHELASTIC_TIMER_FILE (torch's FileTimer)
};

/// The value of `name` in `env`, if it is set there.
std::optional<std::string> environmentValue(const Environment& env, const std::string& name);

/// The "NAME=VALUE" entries a process is started with (ProcessLaunch::environment).
std::vector<std::string> environmentEntries(const Environment& environment);

/// `inherited` (the launcher's own environment) with the worker's variables added. Pure:
/// no I/O, the same inputs always give the same environment. Throws InvalidArgument for
/// --virtual-local-rank when the GPU list has no entry for this worker.
Environment buildWorkerEnv(const Environment& inherited, const WorkerPlacement& placement);

/// What the environments of every worker of this node have in common, whatever the
/// attempt: buildWorkerEnv's without the variables that name one worker or one attempt
/// (ranks, sizes, the master's address, the restart count, the per-worker files). The
/// --preload zygote runs with it, so what a module reads when it is imported is the workers'.
Environment sharedWorkerEnv(const Environment& inherited, const WorkerPlacement& placement);

/// True when buildWorkerEnv sets OMP_NUM_THREADS=1, which torchrun announces to the user.
bool setsOmpNumThreads(const Environment& inherited, int localWorldSize);

}  // namespace pltrun

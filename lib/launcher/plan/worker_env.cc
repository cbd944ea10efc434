#include "launcher/plan/worker_env.h"

#include "launcher/plan/text_parsing.h"
#include "pltrun/error.h"

namespace pltrun {

std::optional<std::string> environmentValue(const Environment& env, const std::string& name) {
  auto found = env.find(name);
  if (found == env.end()) return std::nullopt;
  return found->second;
}

std::vector<std::string> environmentEntries(const Environment& environment) {
  std::vector<std::string> entries;
  entries.reserve(environment.size());
  for (const auto& [name, value] : environment) entries.push_back(name + "=" + value);
  return entries;
}

bool setsOmpNumThreads(const Environment& inherited, int localWorldSize) {
  return localWorldSize > 1 && inherited.count("OMP_NUM_THREADS") == 0;
}

namespace {

// Heartbeats, stack dumps and torch's FileTimer. The Python hook goes first on PYTHONPATH,
// before the user's entries, which it leaves in place.
void addSupervisionVariables(Environment& env, const WorkerPlacement& placement) {
  if (!placement.heartbeatPath.empty()) env["PLTRUN_HEARTBEAT"] = placement.heartbeatPath;
  if (!placement.timerFile.empty()) env["TORCHELASTIC_TIMER_FILE"] = placement.timerFile;
  if (placement.pythonHookDirectory.empty() || placement.stackSignal == 0) return;
  env["PLTRUN_STACK_FILE"] = placement.stackFile;
  env["PLTRUN_STACK_SIGNAL"] = std::to_string(placement.stackSignal);
  auto path = env.find("PYTHONPATH");
  const bool userPath = path != env.end() && !path->second.empty();
  env["PYTHONPATH"] = placement.pythonHookDirectory + (userPath ? ":" + path->second : "");
}

// torchrun's --virtual-local-rank: the worker's own entry of the GPU list the workers would
// otherwise share (--devices', else the inherited CUDA_VISIBLE_DEVICES), else its local
// rank as a GPU index; its LOCAL_RANK is 0.
void applyVirtualLocalRank(Environment& env, const WorkerPlacement& placement) {
  env["LOCAL_RANK"] = "0";
  auto inherited = env.find("CUDA_VISIBLE_DEVICES");
  if (!placement.cudaVisibleDevices && inherited == env.end()) {
    env["CUDA_VISIBLE_DEVICES"] = std::to_string(placement.localRank);
    return;
  }
  const std::string list = placement.cudaVisibleDevices ? *placement.cudaVisibleDevices : inherited->second;
  const std::vector<std::string_view> gpus = splitText(list, ',');
  if (placement.localRank >= static_cast<int>(gpus.size()) || list.empty()) {
    throw Error(ErrorCode::InvalidArgument, "--virtual-local-rank: local rank " + std::to_string(placement.localRank) +
                                                " has no GPU of its own in CUDA_VISIBLE_DEVICES='" + list +
                                                "'; run at most " + std::to_string(list.empty() ? 0 : gpus.size()) +
                                                " workers on this node");
  }
  env["CUDA_VISIBLE_DEVICES"] = std::string(trimSpaces(gpus[placement.localRank]));
}

}  // namespace

Environment buildWorkerEnv(const Environment& inherited, const WorkerPlacement& placement) {
  Environment env = inherited;
  const int worldSize = placement.worldSize > 0 ? placement.worldSize : placement.localWorldSize * placement.nnodes;
  const int firstRank = placement.firstRank >= 0 ? placement.firstRank : placement.nodeRank * placement.localWorldSize;
  const int rank = firstRank + placement.localRank;
  const auto text = [](int value) { return std::to_string(value); };

  env["LOCAL_RANK"] = text(placement.localRank);
  env["RANK"] = text(rank);
  env["GROUP_RANK"] = text(placement.nodeRank);
  env["NODE_RANK"] = text(placement.nodeRank);  // Lightning's name for the group rank
  env["ROLE_RANK"] = text(rank);                // one role per job: role rank = rank
  env["ROLE_NAME"] = placement.role;
  env["LOCAL_WORLD_SIZE"] = text(placement.localWorldSize);
  env["WORLD_SIZE"] = text(worldSize);
  env["ROLE_WORLD_SIZE"] = text(worldSize);
  env["GROUP_WORLD_SIZE"] = text(placement.nnodes);
  env["MASTER_ADDR"] = placement.masterAddr;
  env["MASTER_PORT"] = text(placement.masterPort);
  env["TORCHELASTIC_RESTART_COUNT"] = text(placement.restartCount);
  env["TORCHELASTIC_MAX_RESTARTS"] = text(placement.maxRestarts);
  env["TORCHELASTIC_RUN_ID"] = placement.runId;
  env["TORCHELASTIC_USE_AGENT_STORE"] = placement.useAgentStore ? "True" : "False";
  env["TORCHELASTIC_ERROR_FILE"] = placement.errorFile;
  // pltrun's own mark, which no other launcher sets: pltrun.is_launched() reads it.
  env["PLTRUN_LAUNCHED"] = "1";
  // Defaults that torchrun sets only when the user has not chosen a value. torch >= 2.2
  // reads TORCH_NCCL_ASYNC_ERROR_HANDLING first and the old NCCL_ASYNC_ERROR_HANDLING only
  // as a deprecated fallback, so a user's old-name choice is carried over rather than
  // silently overridden by our default. The old name is never set for the user: torch 2.x
  // warns about it in every rank (torch 1.13 reads only the old name: export it there).
  auto oldName = inherited.find("NCCL_ASYNC_ERROR_HANDLING");
  env.emplace("TORCH_NCCL_ASYNC_ERROR_HANDLING", oldName != inherited.end() ? oldName->second : "1");
  if (setsOmpNumThreads(inherited, placement.localWorldSize)) env["OMP_NUM_THREADS"] = "1";
  if (placement.virtualLocalRank) {
    applyVirtualLocalRank(env, placement);
  } else if (placement.cudaVisibleDevices) {
    env["CUDA_VISIBLE_DEVICES"] = *placement.cudaVisibleDevices;
  }
  addSupervisionVariables(env, placement);
  return env;
}

Environment sharedWorkerEnv(const Environment& inherited, const WorkerPlacement& placement) {
  // Everything else buildWorkerEnv sets is the same for every worker of every attempt.
  static const char* const kPerWorkerOrAttempt[] = {"LOCAL_RANK",
                                                    "RANK",
                                                    "GROUP_RANK",
                                                    "NODE_RANK",
                                                    "ROLE_RANK",
                                                    "WORLD_SIZE",
                                                    "ROLE_WORLD_SIZE",
                                                    "GROUP_WORLD_SIZE",
                                                    "MASTER_ADDR",
                                                    "MASTER_PORT",
                                                    "TORCHELASTIC_RESTART_COUNT",
                                                    "TORCHELASTIC_USE_AGENT_STORE",
                                                    "TORCHELASTIC_ERROR_FILE",
                                                    "PLTRUN_HEARTBEAT",
                                                    "PLTRUN_STACK_FILE"};
  Environment env = buildWorkerEnv(inherited, placement);
  for (const char* name : kPerWorkerOrAttempt) env.erase(name);
  if (placement.virtualLocalRank) env.erase("CUDA_VISIBLE_DEVICES");  // each worker's own GPU
  return env;
}

}  // namespace pltrun

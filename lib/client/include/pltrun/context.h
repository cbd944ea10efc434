#pragma once
// Where this process sits in the job, read from the variables the launcher sets (pltrun,
// torchrun, or anything torchrun-compatible). Run without a launcher, it is a world of one.

#include <functional>
#include <string>

namespace pltrun {

struct Context {
  int rank = 0;            ///< RANK
  int localRank = 0;       ///< LOCAL_RANK
  int worldSize = 1;       ///< WORLD_SIZE
  int localWorldSize = 1;  ///< LOCAL_WORLD_SIZE
  int nodeRank = 0;        ///< GROUP_RANK (or NODE_RANK)
  int numNodes = 1;        ///< GROUP_WORLD_SIZE
  int restartCount = 0;    ///< TORCHELASTIC_RESTART_COUNT
  std::string runId;       ///< TORCHELASTIC_RUN_ID
  std::string masterAddr;  ///< MASTER_ADDR: where the store is
  int masterPort = 0;      ///< MASTER_PORT
  /// TORCHELASTIC_USE_AGENT_STORE: the launcher hosts the store at MASTER_ADDR:MASTER_PORT.
  bool agentStore = false;
  /// False when no launcher variable was set: the single-process defaults above.
  bool launched = false;

  /// Reads the current environment. Throws Error(InvalidArgument) naming the variable
  /// that is missing or malformed, and its value.
  static Context fromEnvironment();
  /// The same, from any lookup (returns nullptr for unset), for tests and embedders.
  static Context fromLookup(const std::function<const char*(const char*)>& lookup);
};

}  // namespace pltrun

#pragma once
// Who is node rank what, once a rendezvous round has closed. Pure: the same participants
// always give the same ranks, so a job whose membership did not change keeps its ranks
// across restarts (checkpoints sharded by rank stay valid).

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

namespace pltrun::rdzv {

/// What one agent tells the others when it joins a round (stored as JSON in its slot).
struct NodeDescriptor {
  std::string agentId;  ///< unique per agent process, stable for its lifetime
  std::string host;     ///< host name, for messages
  /// The name the job expects this node under (node_name: Slurm's node name, the driver's
  /// host entry); empty: its host name (see expected_nodes.h).
  std::string name;
  std::string addr;  ///< where peers reach this node (MASTER_ADDR when it hosts rank 0's store)
  int localWorldSize = 1;
  std::optional<int> rankHint;  ///< --node-rank, honoured when every hint is consistent
  /// Where its agent accepts the link that tells its ring neighbour at once when it dies
  /// (launcher/net/peer_link.h), at `addr`; 0: it holds no such link (c10d's close notice does that job).
  int linkPort = 0;
  /// For `pltrun status` only (0, -1 or empty: not told, an older agent): the agent's pid and
  /// the job's settings as this agent runs it.
  int pid = 0;
  int minNodes = 0;
  int maxNodes = 0;
  int maxRestarts = -1;
  int keepAliveMs = 0;
};

nlohmann::json toJson(const NodeDescriptor& node);
/// Throws Error(Protocol) naming what is wrong when `text` is not a descriptor.
NodeDescriptor nodeDescriptorFromJson(const std::string& text);

/// One node's place in the formed job.
struct NodeAssignment {
  int nodeRank = 0;
  int nnodes = 1;
  int worldSize = 1;  ///< workers in the whole job
  int firstRank = 0;  ///< global rank of this node's local rank 0
  std::string rank0Addr;
};

nlohmann::json toJson(const NodeAssignment& assignment);
NodeAssignment nodeAssignmentFromJson(const std::string& text);

struct AssignmentResult {
  std::vector<NodeAssignment> byParticipant;  ///< in the order of the participants given
  std::string warning;                        ///< non-empty when the hints were ignored
};

/// Node ranks for `participants`: every --node-rank hint is honoured when the hints are
/// distinct and below the node count; the remaining ranks go to the other nodes in order of
/// (addr, agentId). Inconsistent hints are all ignored (with a warning), never half-used.
/// Global ranks follow node ranks: node k's workers come after those of nodes 0..k-1.
AssignmentResult assignNodeRanks(const std::vector<NodeDescriptor>& participants);

}  // namespace pltrun::rdzv

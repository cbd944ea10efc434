#include "launcher/status/impossible_values.h"

#include "base/terminal_text.h"
#include "launcher/plan/worker_count.h"

namespace pltrun {

bool impossibleName(std::string_view name) {
  if (name.empty() || name.size() > kMaxNameLength) return true;
  // terminalSafeLine changes exactly the control characters and the bytes that are not UTF-8.
  return name.find(' ') != std::string_view::npos || terminalSafeLine(name) != name;
}

bool impossibleDescriptor(const rdzv::NodeDescriptor& node) {
  if (impossibleName(node.host) || impossibleName(node.addr)) return true;
  if (!node.name.empty() && impossibleName(node.name)) return true;
  if (node.localWorldSize < 1 || node.localWorldSize > kMaxWorkersPerNode) return true;
  if (node.pid < 0 || node.pid > kMaxPid) return true;
  const bool nodesTold = node.minNodes != 0 || node.maxNodes != 0;
  if (nodesTold && (node.minNodes < 1 || node.maxNodes < node.minNodes)) return true;
  return node.maxRestarts < -1 || node.keepAliveMs < 0;
}

bool impossibleAssignment(const rdzv::NodeAssignment& assignment, int workers, std::optional<int> nnodes) {
  if (assignment.nnodes < 1 || (nnodes && assignment.nnodes != *nnodes)) return true;
  if (assignment.nodeRank < 0 || assignment.nodeRank >= assignment.nnodes) return true;
  // In 64 bits: first_rank + workers must not wrap around to look in range.
  return assignment.firstRank < 0 || static_cast<long long>(assignment.firstRank) + workers > assignment.worldSize;
}

bool impossibleNodeState(const rdzv::NodeState& state, int workers, int firstRank) {
  if (state.state != "running" && state.state != "failed" && state.state != "succeeded") return true;
  if (state.workers > workers) return true;
  if (!state.host.empty() && impossibleName(state.host)) return true;
  if (firstRank < 0) return false;
  for (const rdzv::RankProgress& rank : state.ranks) {
    if (rank.rank < firstRank || static_cast<long long>(rank.rank) >= static_cast<long long>(firstRank) + workers) {
      return true;
    }
  }
  return false;
}

}  // namespace pltrun

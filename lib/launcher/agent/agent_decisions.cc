#include "launcher/agent/agent_decisions.h"

#include <signal.h>

#include <algorithm>

#include "base/terminal_text.h"

namespace pltrun {

using Reason = rdzv::RoundEnd::Reason;

AfterRound decideAfterRound(const rdzv::RoundEnd& end, int nnodes, int maxNodes,
                            std::chrono::milliseconds closeTimeout) {
  if (end.reason == Reason::Succeeded) return AfterRound{true, 0, std::nullopt, closeTimeout};
  if (end.final) return AfterRound{true, end.status != 0 ? end.status : 1, std::nullopt, kFailureExitBarrier};
  int expected = nnodes;
  if (end.reason == Reason::NodeLost) expected = nnodes - 1;
  if (end.reason == Reason::NodeJoined) expected = std::min(nnodes + 1, maxNodes);
  return AfterRound{false, 0, expected, std::chrono::milliseconds(0)};
}

int closedJobStatus(const rdzv::RoundEnd& end, bool beforeJoining) {
  if (end.reason == Reason::Succeeded) return beforeJoining ? 1 : 0;
  return end.status != 0 ? end.status : 1;
}

int stopSignal(int received, const std::optional<GroupOutcome>& outcome) {
  if (received != 0) return received;
  if (outcome && outcome->interruptSignal != 0) return outcome->interruptSignal;
  return SIGTERM;
}

std::vector<RankEvidence> otherNodesEvidence(const std::vector<rdzv::NodeState>& nodes) {
  std::vector<RankEvidence> ranks;
  for (const rdzv::NodeState& node : nodes) {
    for (const rdzv::RankProgress& progress : node.ranks) {
      RankEvidence rank;
      rank.rank = progress.rank;
      rank.host = terminalSafeLine(node.host);
      rank.counter = progress.step;
      rank.silentSeconds = progress.silentSeconds;
      rank.onOtherNode = true;
      ranks.push_back(rank);
    }
  }
  return ranks;
}

}  // namespace pltrun

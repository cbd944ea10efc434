#pragma once
// The elastic agent's decisions, as pure functions of what happened: go on with another
// round or end the job (and with which status), how many nodes the next round expects,
// how long the store's host waits for the others to leave, which signal a stop reports.
// The agent (elastic_agent.cc) does the store calls and the logging around them.

#include <chrono>
#include <optional>
#include <vector>

#include "launcher/group/worker_group.h"
#include "launcher/stall/stall_verdict.h"
#include "rendezvous/elastic/node_state.h"
#include "rendezvous/elastic/round_end.h"

namespace pltrun {

/// What an agent does once a round has ended.
struct AfterRound {
  bool finished = false;             ///< the job is over for this node
  int status = 0;                    ///< when finished: this agent's exit status
  std::optional<int> expectedNodes;  ///< when not: the nodes the next round expects
  /// When finished: how long the store's host waits for the other agents to leave (they
  /// must read why the job ended before the store goes away).
  std::chrono::milliseconds exitBarrier{0};
};

/// A failed or stopped job's exit barrier; a successful one waits close_timeout.
constexpr std::chrono::milliseconds kFailureExitBarrier{5000};

/// After round `end` of `nnodes` nodes: success ends the job with 0; a final end ends it
/// with its status (1 if it has none); anything else re-forms the job, expecting one node
/// fewer when one was lost and one more (up to `maxNodes`) when one joined.
AfterRound decideAfterRound(const rdzv::RoundEnd& end, int nnodes, int maxNodes,
                            std::chrono::milliseconds closeTimeout);

/// The exit status of an agent that finds the job already closed: 0 when it succeeded
/// after this agent had seen it open, 1 when it had succeeded before (a reused run id),
/// else the job's status (1 if it has none).
int closedJobStatus(const rdzv::RoundEnd& end, bool beforeJoining);

/// The signal a stopping agent reports: the one it received, else the one that
/// interrupted its workers, else SIGTERM.
int stopSignal(int received, const std::optional<GroupOutcome>& outcome);

/// The other nodes' ranks as their agents published them (rR/state/I), for a stall's
/// verdict. A node's host name is the store's word (anyone with access may write there): it
/// is shown within its line of the stall report, its controls and newlines as \xNN.
std::vector<RankEvidence> otherNodesEvidence(const std::vector<rdzv::NodeState>& nodes);

}  // namespace pltrun

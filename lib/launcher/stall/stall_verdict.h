#pragma once
// Pure: which rank caused a hang, as well as the evidence allows. Every rank's progress
// counter and stack go in (from this node, and the counters the other nodes of an elastic
// job published); out comes the culprit(s) and one line that says why:
//   1. counters differ: the ranks with the lowest counter are behind everyone else;
//   2. equal counters (a collective hang): the ranks whose stack is not in a collective (or
//      that are stopped) while the others' are;
//   3. otherwise the ranks that went silent while others still send heartbeats;
//   4. otherwise a node's lone worker that is not waiting in a collective;
//   5. otherwise it cannot tell, and says so: every stack is shown.

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "launcher/stall/stack_sample.h"

namespace pltrun {

struct RankEvidence {
  int rank = 0;
  std::string host;
  pid_t pid = 0;
  std::optional<long long> counter;         ///< the last progress counter it sent
  std::optional<long long> highestCounter;  ///< the highest it sent (this node's ranks only)
  std::optional<double> silentSeconds;      ///< since its last heartbeat; none: it never sent one
  bool stalled = false;                     ///< silent for longer than --stall-timeout
  StackSample stack;
  /// Published by another node's agent (rR/state/I): a counter and a heartbeat age as of its
  /// last publication, no pid, no stack; its own node judges whether it stalled.
  bool onOtherNode = false;
};

/// Agents publish their ranks' progress every 2 s. Another node's counter is its last one
/// only if the rank had already been silent that long when it was published: at a stall of
/// 4 s or more, the newest publication shows that. A shorter silence may be a rank that is
/// still counting, so its counter is not compared (that would make a fast rank look behind).
constexpr double kSettledSilenceSeconds = 2.0;
/// Another node's rank that had sent a heartbeat this recently when published still beats.
constexpr double kStillBeatingSeconds = 1.0;

struct StallVerdict {
  std::vector<int> culprits;  ///< empty: it cannot tell
  std::string why;            ///< one line: "rank 2 is in train.py:33 in step; ranks 0, 1, 3 wait in all_reduce"
};

StallVerdict judgeStall(const std::vector<RankEvidence>& ranks);

/// "rank 2" or "ranks 0, 1, 3".
std::string rankListText(const std::vector<int>& ranks);

}  // namespace pltrun

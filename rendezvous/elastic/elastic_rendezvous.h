#pragma once
// The c10d-style rendezvous of elastic jobs, on any pltrun::Store (the store an agent hosts,
// or pltrun-store). Agents meet in numbered rounds: join -> last call -> complete.
//
// The keys it keeps, and what each holds: store_layout.h.

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "pltrun/store.h"
#include "rendezvous/elastic/join_roster.h"
#include "rendezvous/elastic/node_assignment.h"
#include "rendezvous/elastic/node_state.h"
#include "rendezvous/elastic/round_end.h"
#include "rendezvous/elastic/store_layout.h"

namespace pltrun::rdzv {

struct ElasticRendezvousOptions {
  std::string runId;
  int minNodes = 1;
  int maxNodes = 1;
  std::chrono::milliseconds joinTimeout{600000};
  std::chrono::milliseconds lastCallTimeout{30000};
  std::chrono::milliseconds closeTimeout{30000};
  /// How often a waiting agent looks again: for the last call, its progress line and the
  /// caller's between-waits hook (signals). Completion itself wakes it at once.
  std::chrono::milliseconds pollInterval{500};
  /// How often a waiting agent says who is missing.
  std::chrono::milliseconds progressInterval{5000};
  /// The nodes the job expects, by name (Slurm's node list, the driver's hosts,
  /// expected_hosts=): waiting lines and the join timeout name those not joined. Empty:
  /// counts only.
  std::vector<std::string> expectedHosts;
};

/// The job is over (a RoundEnd with final set, or Succeeded): no round will form again.
struct JobClosed {
  RoundEnd end;
  bool beforeJoining = false;  ///< it was over before this agent ever saw it open (a reused run id?)
};

/// This node's place in a formed round.
struct RoundInfo {
  int round = 0;
  int slot = 0;  ///< 1-based, this round only
  NodeAssignment assignment;
  int failures = 0;  ///< worker failures so far in the job
};

/// The slot this node watches in a formed round: the next one round the ring (slots are
/// exactly 1..nnodes), so that every node is watched by exactly one other.
inline int ringPeerSlot(const RoundInfo& info) { return info.slot % info.assignment.nnodes + 1; }

class ElasticRendezvous {
 public:
  /// Called between waits (every pollInterval at most); may throw to abandon the wait.
  using BetweenWaits = std::function<void()>;

  ElasticRendezvous(Store& store, ElasticRendezvousOptions options, NodeDescriptor self);

  /// Joins the first open round after `after` (-1 for the first) and waits for it to form.
  /// `expectedNodes`: the membership the caller expects (the last round's, give or take the
  /// node that left or joined); the round closes as soon as that many have joined, without
  /// waiting out the last call. Throws JobClosed when the job is over, and
  /// Error(Timeout) saying how many nodes are missing after joinTimeout.
  RoundInfo join(int after, std::optional<int> expectedNodes, const BetweenWaits& betweenWaits);

  /// Ends `round` for every agent, unless it has ended already; returns the end that holds.
  RoundEnd endRound(int round, const RoundEnd& end);
  /// A worker of this node failed in `round`: counts it against `maxRestarts` and ends the
  /// round (final, and the job closed, when no restart is left). Returns the end that holds.
  RoundEnd reportWorkerFailure(int round, RoundEnd failure, int maxRestarts);
  /// Every worker of this node succeeded in `info.round`; the last node to say so ends the
  /// round (and the job) as Succeeded.
  void reportSucceeded(const RoundInfo& info);
  /// Closes the job: agents waiting to join, now or later, stop with `why`.
  void closeJob(const RoundEnd& why);
  /// The exit barrier. Every agent but the store's host calls leave() as its last request;
  /// the host waits (up to `timeout`) for the others, so nobody loses the store early.
  void leave(int round);
  /// Polls until `others` agents of `round` have left (from it, or from the round after it,
  /// which they had joined before the job closed), up to `timeout`; says who it waits for.
  void waitForOthersToLeave(int round, int others, std::chrono::milliseconds timeout);
  /// Agents that took a slot in `round` (a late joiner past MAX included).
  int membersOf(int round);
  /// The last round this agent was a member of, if any.
  std::optional<int> lastMemberRound() const { return lastMemberRound_; }

  /// What this node's workers are doing, for `pltrun status`: "running", "failed" or
  /// "succeeded", with how many of them run, and while they run their heartbeats. One write
  /// at each change, and every few seconds while workers that send heartbeats run; with
  /// this node's goodput when given (issue 47).
  void reportNodeState(const RoundInfo& info, const std::string& state, int workersRunning,
                       const std::vector<RankProgress>& ranks = {},
                       const std::optional<NodeGoodput>& goodput = std::nullopt);
  /// What the other nodes of the round last published (reportNodeState), read until
  /// `deadline`: a node that published nothing yet, or nothing readable, is left out.
  std::vector<NodeState> readOtherNodesStates(const RoundInfo& info, std::chrono::steady_clock::time_point deadline);

  /// Deletes every key of `round` (its descriptors, assignments, heartbeats, states, end...).
  /// Called by node rank 0 of round+2 once its workers run: `pltrun status` reads only the
  /// newest round and the one before it, and every agent of `round` saw its end before it
  /// joined a later round. So a job's keys stay O(nodes), however many rounds it runs.
  /// Returns how many keys were deleted.
  int forgetRound(int round);

  /// The store's key of `name`, one of store_layout.h's: key(layout::end(3)) is
  /// "pltrun/rdzv/RUN/r3/end".
  std::string key(const std::string& name) const;
  const NodeDescriptor& self() const { return self_; }

 private:
  std::optional<RoundInfo> tryRound(int round, std::optional<int> expectedNodes, const BetweenWaits& betweenWaits);
  void waitUntilFormedOrEnded(int round, const BetweenWaits& betweenWaits);
  bool waitUntilFormed(int round, int slot, int closeEarlyAt, const BetweenWaits& betweenWaits);
  bool waitAsJoiner(int round, const BetweenWaits& betweenWaits);
  [[noreturn]] void failJoinTimeout(int round, int joined, JoinRoster& roster);
  void reportWaiting(int joined, std::optional<std::chrono::steady_clock::time_point> lastCallEnds, JoinRoster& roster);
  void closeRound(int round);
  void standAside(int round, int runningNodes, const BetweenWaits& betweenWaits);
  /// The keys of a round an agent waits on while it joins, by name: which one exists
  /// decides what it does next. Where several exist at once, the one listed first wins.
  enum class Watched {
    Closed,    ///< layout::kClosed: the job is over
    End,       ///< layout::end(round): the round is over
    Complete,  ///< layout::complete(round): the round has formed
  };
  std::vector<std::string> watchedKeys(int round, const std::vector<Watched>& watched) const;
  std::optional<Watched> firstExisting(int round, const std::vector<Watched>& watched);
  std::optional<Watched> waitForAny(int round, const std::vector<Watched>& watched, std::chrono::milliseconds timeout,
                                    const BetweenWaits& betweenWaits);
  void throwIfJobClosed();
  void advanceRoundHint(int seen, int round);
  std::string lostNotice() const;

  Store& store_;
  ElasticRendezvousOptions options_;
  NodeDescriptor self_;
  std::chrono::steady_clock::time_point deadline_;  ///< of the join under way
  bool yieldToMembers_ = false;                     ///< a spare waits for the next round to form before asking in
  bool sawJobOpen_ = false;
  std::optional<int> lastMemberRound_;
};

}  // namespace pltrun::rdzv

#pragma once
// One round on this node: the port of the round's workers' store (published by node rank 0,
// read by the others), this node's workers, and what ends the round here: a failure of one
// of them (reported to the other nodes at once), a round end the watcher sees (a failure,
// a lost or a new node elsewhere; every node done), the store lost, or a stop signal.
// What the job does next is the round loop's to decide (elastic_agent.cc).

#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "launcher/agent/agent_workers.h"
#include "launcher/agent/rendezvous_connection.h"
#include "launcher/agent/stop_request.h"
#include "launcher/group/attempt_plan.h"
#include "rendezvous/elastic/round_watcher.h"

namespace pltrun {

/// How a round ended for this node.
struct RoundReport {
  enum class Kind {
    Ended,        ///< `end` holds (this node's or another's)
    StoreLost,    ///< the store went away first: `storeLost` says how; the workers were killed
    Interrupted,  ///< a stop signal came: `outcome` is the workers' (if they had started)
  };
  Kind kind = Kind::Ended;
  rdzv::RoundEnd end;
  bool reportedHere = false;  ///< this node reported the failure that ended the round
  std::string storeLost;
  std::optional<GroupOutcome> outcome;  ///< also for Ended, once this node's workers had started
  /// Ended: the highest heartbeat counter this node's ranks sent (--max-no-progress-restarts).
  std::optional<long long> highestCounter;
};

class RoundRun {
 public:
  /// Round `info` of `job` on this node: its workers start in `workers`, it hears of the
  /// other nodes through `connection`, and a signal in `stop` ends it.
  RoundRun(const ResolvedJob& job, RendezvousConnection& connection, AgentWorkers& workers, const StopRequest& stop,
           const rdzv::RoundInfo& info);
  ~RoundRun();
  RoundRun(const RoundRun&) = delete;
  RoundRun& operator=(const RoundRun&) = delete;

  /// Runs the round to its end on this node. After an Interrupted report the round's watcher
  /// and workers' group live on until this object is destroyed, so that the stop can still
  /// be announced within the round.
  RoundReport run();

 private:
  std::optional<NodePlacement> placeThisNode();
  void publishState(const std::string& state, int workersRunning, const std::vector<rdzv::RankProgress>& ranks = {});
  void publishProgressEvery(std::chrono::seconds interval);
  std::vector<RankEvidence> otherNodesProgress();
  void forgetOldRound();
  void onRootCause(const WorkerSpec& spec, pid_t pid, const RootCauseNotice& notice);
  void watch();
  void linkToPeer();
  void onPeerLost(const std::string& peerHost, const std::string& why);
  void waitForOtherNodes();
  RoundReport ended() const;

  const ResolvedJob& job_;
  RendezvousConnection& connection_;
  AgentWorkers& workers_;
  const StopRequest& stop_;
  const rdzv::RoundInfo& info_;
  // Set from the group's and the watcher's callbacks, on the event loop's thread: the first
  // round end seen, or the store lost; whichever comes first settles the round.
  std::optional<rdzv::RoundEnd> end_;
  std::optional<std::string> storeLost_;
  bool reportedHere_ = false;
  std::unique_ptr<WorkerGroup> group_;
  std::unique_ptr<rdzv::RoundWatcher> watcher_;  // after group_: destroyed before it
  std::unique_ptr<PeerLink> peerLink_;           // etcd: to the next slot of the ring
  int workersStarted_ = 0;
  // Publishes the workers' heartbeats while they run; the token tells a handler already
  // queued when this round is gone.
  std::unique_ptr<boost::asio::steady_timer> progressTimer_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace pltrun

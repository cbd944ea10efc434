#include "launcher/agent/round_run.h"

#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "base/host_port_text.h"
#include "launcher/agent/agent_decisions.h"
#include "launcher/metrics/restart_cause.h"
#include "launcher/plan/text_parsing.h"
#include "launcher/stall/restart_progress.h"
#include "pltrun/error.h"
#include "rendezvous/elastic/store_json.h"

namespace pltrun {

namespace {

using rdzv::RoundEnd;
using Reason = rdzv::RoundEnd::Reason;

// How often an agent whose workers are done says how many nodes have finished.
constexpr std::chrono::seconds kProgressInterval{5};  // a line while the exit barrier lasts
// How often the workers' heartbeats go to the store for `pltrun status` and the other
// nodes' stall verdicts: one small write per node, and only for workers that send heartbeats.
constexpr std::chrono::seconds kHeartbeatPublishInterval{2};
static_assert(std::chrono::duration<double>(kHeartbeatPublishInterval).count() <= kSettledSilenceSeconds,
              "a rank another node published as silent must have been silent since its previous publication");
// How long a stall's verdict may wait for the other nodes' published progress.
constexpr std::chrono::seconds kOtherNodesReadBudget{1};

}  // namespace

RoundRun::RoundRun(const ResolvedJob& job, RendezvousConnection& connection, AgentWorkers& workers,
                   const StopRequest& stop, const rdzv::RoundInfo& info)
    : job_(job), connection_(connection), workers_(workers), stop_(stop), info_(info) {}

RoundRun::~RoundRun() { workers_.releaseGroup(); }

RoundReport RoundRun::run() {
  const std::optional<NodePlacement> placement = placeThisNode();
  if (!placement) return ended();
  const std::vector<WorkerSpec> specs = workerSpecsFor(workers_.plan(), info_.round, *placement);

  GroupSettings settings = workers_.groupSettings(info_.round, specs);
  settings.onRootCause = [this](const WorkerSpec& spec, pid_t pid, const RootCauseNotice& notice) {
    onRootCause(spec, pid, notice);
  };
  settings.otherNodesProgress = [this] { return otherNodesProgress(); };
  group_ = workers_.makeGroup(settings);
  workers_.runner().start(*group_, specs);
  workersStarted_ = static_cast<int>(specs.size());
  publishState("running", workersStarted_);
  publishProgressEvery(kHeartbeatPublishInterval);
  watch();
  linkToPeer();
  forgetOldRound();
  const GroupOutcome outcome = workers_.runner().waitForGroup();
  progressTimer_.reset();

  if (stop_.requested() || outcome.kind == GroupOutcome::Kind::Interrupted) {
    return RoundReport{RoundReport::Kind::Interrupted, {}, false, "", outcome, std::nullopt};
  }
  if (reportedHere_ && end_->final && outcome.rootCause) {
    printFailureReport(*outcome.rootCause, outcome.others, workers_.directory().failureReport());
  }
  if (!end_ && !storeLost_ && outcome.kind == GroupOutcome::Kind::Succeeded) {
    waitForOtherNodes();
    if (stop_.requested())
      return RoundReport{RoundReport::Kind::Interrupted, {}, false, "", std::nullopt, std::nullopt};
  }
  watcher_.reset();
  // The watcher's thread has ended: run what it posted while the group still exists.
  workers_.runner().runPending();
  RoundReport report = ended();
  report.outcome = outcome;
  report.highestCounter = highestCounter(group_->progress());
  return report;
}

RoundReport RoundRun::ended() const {
  if (storeLost_ && !end_)
    return RoundReport{RoundReport::Kind::StoreLost, {}, false, *storeLost_, std::nullopt, std::nullopt};
  return RoundReport{RoundReport::Kind::Ended, *end_, reportedHere_, "", std::nullopt, std::nullopt};
}

// The workers' store is node rank 0's, at the address it joined with, on a port it
// publishes in the round's keys: the agent's own store, new this round (the agent store),
// or the one rank 0's worker opens (--no-agent-store, torchrun's way). Either way the
// workers never reach the rendezvous store and no round sees another's keys. Empty when
// rank 0's node never said which port: the round then ends, as a failed rendezvous.
std::optional<NodePlacement> RoundRun::placeThisNode() {
  const rdzv::NodeAssignment& assignment = info_.assignment;
  NodePlacement node;
  node.nodeRank = assignment.nodeRank;
  node.nnodes = assignment.nnodes;
  node.worldSize = assignment.worldSize;
  node.firstRank = assignment.firstRank;
  node.useAgentStore = workers_.store().hostedHere();
  node.masterAddr = assignment.rank0Addr;
  const std::string key = connection_.rendezvous().key(rdzv::layout::masterPort(info_.round));
  try {
    if (assignment.nodeRank == 0) {
      node.masterPort = workers_.store().openNext();
      connection_.store().set(key, std::to_string(node.masterPort));
    } else {
      node.masterPort =
          rdzv::storedDecimal(key, connection_.store().get(key, connection_.settings().closeTimeout), 1, 65535, "port");
    }
  } catch (const Error& error) {
    RoundEnd failed;
    failed.reason = Reason::RendezvousFailed;
    failed.host = connection_.host();
    failed.message = std::string("no store port from rank 0's node: ") + error.what();
    end_ = connection_.rendezvous().endRound(info_.round, failed);
    return std::nullopt;
  }
  return node;
}

// For `pltrun status` only: a store that does not answer is the watcher's business.
void RoundRun::publishState(const std::string& state, int workersRunning,
                            const std::vector<rdzv::RankProgress>& ranks) {
  try {
    connection_.rendezvous().reportNodeState(info_, state, workersRunning, ranks,
                                             workers_.metrics().goodput(MetricsRecorder::Clock::now()));
  } catch (const Error& error) {
    spdlog::debug("could not publish this node's state '{}': {}", state, error.what());
  }
}

// While the workers run: their progress counters and heartbeat ages, so that `pltrun status`
// shows each node's slowest rank. Workers that never sent a heartbeat cost the store nothing.
void RoundRun::publishProgressEvery(std::chrono::seconds interval) {
  if (!progressTimer_) progressTimer_ = std::make_unique<boost::asio::steady_timer>(workers_.context());
  progressTimer_->expires_after(interval);
  progressTimer_->async_wait([this, interval, alive = std::weak_ptr<bool>(alive_)](boost::system::error_code error) {
    if (error || !alive.lock() || !progressTimer_ || end_ || storeLost_) return;
    std::vector<rdzv::RankProgress> ranks;
    bool anyBeat = false;
    for (const RankEvidence& worker : group_->progress()) {
      anyBeat = anyBeat || worker.silentSeconds.has_value();
      ranks.push_back({worker.rank, worker.counter, worker.silentSeconds, workers_.metrics().stepSeconds(worker.rank)});
    }
    if (anyBeat) publishState("running", workersStarted_, ranks);
    publishProgressEvery(interval);
  });
}

// Node rank 0 deletes the keys of the round two back, once this round's workers run (the
// store keeps O(nodes) keys however many rounds the job runs). Best effort: a key left
// behind costs memory, not correctness.
void RoundRun::forgetOldRound() {
  if (info_.assignment.nodeRank != 0 || info_.round < 2) return;
  try {
    const int deleted = connection_.rendezvous().forgetRound(info_.round - 2);
    spdlog::debug("deleted the {} keys of round {}", deleted, info_.round - 2);
  } catch (const Error& error) {
    spdlog::debug("could not delete the keys of round {}: {}", info_.round - 2, error.what());
  }
}

// For a stall's verdict: the other nodes' ranks as last published (the event loop waits
// meanwhile, a second at most). A store that does not answer is the watcher's business.
std::vector<RankEvidence> RoundRun::otherNodesProgress() {
  if (end_ || storeLost_) return {};
  try {
    const auto deadline = std::chrono::steady_clock::now() + kOtherNodesReadBudget;
    return otherNodesEvidence(connection_.rendezvous().readOtherNodesStates(info_, deadline));
  } catch (const Error& error) {
    spdlog::debug("could not read the other nodes' progress: {}", error.what());
  }
  return {};
}

// The first failure is announced at once, before this node's workers are stopped: the
// other nodes stop theirs meanwhile, and the report stays with the node that failed.
void RoundRun::onRootCause(const WorkerSpec& spec, pid_t pid, const RootCauseNotice& notice) {
  if (end_ || storeLost_) return;
  RoundEnd failure;
  failure.host = connection_.host();
  failure.status = notice.status;
  failure.message = "rank " + std::to_string(spec.rank) + " (local rank " + std::to_string(spec.localRank) + ", pid " +
                    std::to_string(pid) + ") " + notice.what;
  // Every node counts this restart under the cause seen here (pltrun_restarts_total).
  failure.cause = restartCauseName(restartCauseOf(notice.failure));
  try {
    end_ = connection_.rendezvous().reportWorkerFailure(info_.round, failure, job_.config.maxRestarts);
    reportedHere_ =
        end_->reason == Reason::WorkerFailed && end_->host == connection_.host() && end_->message == failure.message;
  } catch (const Error& error) {
    storeLost_ = error.what();
  }
  if (!storeLost_) publishState("failed", 0);  // after the announcement, which must not wait
}

// The watcher runs on a thread of its own and posts what it sees to the event loop: a round
// end stops this node's workers; a lost store kills them at once (fencing: the others may
// re-form without this node any moment now).
void RoundRun::watch() {
  rdzv::RoundWatcherSettings watchSettings;
  watchSettings.keepAliveInterval = connection_.settings().keepAliveInterval;
  watchSettings.keepAliveMaxAttempt = connection_.settings().keepAliveMaxAttempt;
  // etcd without a quorum re-forms nobody: the workers keep running until it is back; but
  // once this agent's lease is known gone, the others have re-formed without it.
  if (connection_.onEtcd()) {
    watchSettings.outageTolerance = connection_.settings().joinTimeout;
    watchSettings.fenced = [&connection = connection_] { return connection.leaseKnownLost(); };
  }
  WorkerGroup& group = *group_;
  watcher_ = std::make_unique<rdzv::RoundWatcher>(
      connection_.connectWatcherStore(), connection_.rendezvous(), info_, watchSettings,
      [this, &group](const RoundEnd& end) {
        boost::asio::post(workers_.context(), [this, &group, end] {
          if (!end_) end_ = end;
          group.stop();
        });
      },
      [this, &group](const std::string& message) {
        boost::asio::post(workers_.context(), [this, &group, message] {
          storeLost_ = message;
          group.kill();
        });
      });
}

// On etcd, the agent the round watcher watches (the next slot) is also watched through a link (peer_link.h): its death
// ends the round in milliseconds, where its lease would take seconds. A link that cannot be
// made leaves the peer to the heartbeats and the lease.
void RoundRun::linkToPeer() {
  const int nnodes = info_.assignment.nnodes;
  if (!connection_.acceptsPeerLinks() || nnodes < 2) return;
  const std::string peerKey = connection_.rendezvous().key(rdzv::layout::slot(info_.round, rdzv::ringPeerSlot(info_)));
  rdzv::NodeDescriptor peer;
  try {
    peer = rdzv::nodeDescriptorFromJson(connection_.store().get(peerKey, connection_.settings().closeTimeout));
  } catch (const Error& error) {
    spdlog::warn("cannot read the next node's description ({}); its loss is noticed by its heartbeats only",
                 error.what());
    return;
  }
  if (peer.linkPort == 0) return;
  peerLink_ = std::make_unique<PeerLink>(
      workers_.context(), peer.addr, peer.linkPort, peer.agentId,
      [this, host = peer.host](const std::string& why) { onPeerLost(host, why); },
      [host = peer.host, addr = peer.addr, port = peer.linkPort](const std::string& why) {
        spdlog::warn("cannot link to node {} at {} ({}); its loss is noticed by its heartbeats and lease only", host,
                     hostPortText(addr, port), why);
      });
}

void RoundRun::onPeerLost(const std::string& peerHost, const std::string& why) {
  if (end_ || storeLost_) return;
  RoundEnd lost;
  lost.reason = Reason::NodeLost;
  lost.host = peerHost;
  lost.message = "its agent is gone: " + why + ", seen from " + connection_.host();
  try {
    end_ = connection_.rendezvous().endRound(info_.round, lost);
  } catch (const Error& error) {
    storeLost_ = error.what();
    group_->kill();
    return;
  }
  group_->stop();
}

// This node's workers all succeeded: it says so, then waits for the round's end (every
// node done, or a failure elsewhere that restarts everyone), saying who is still running.
void RoundRun::waitForOtherNodes() {
  publishState("succeeded", 0);
  try {
    connection_.rendezvous().reportSucceeded(info_);
  } catch (const Error& error) {
    storeLost_ = error.what();
    return;
  }
  spdlog::info(
      "this node's {} succeeded; waiting for the other nodes as long as their workers run (a node that "
      "fails or is lost ends the wait); Ctrl-C stops",
      countedNoun(job_.layout.workerCount, "worker"));
  boost::asio::steady_timer progress(workers_.context());
  std::function<void()> reportProgress = [&] {
    progress.expires_after(kProgressInterval);
    progress.async_wait([&](boost::system::error_code error) {
      if (error || end_ || storeLost_) return;
      try {
        const auto done = connection_.store().add(connection_.rendezvous().key(rdzv::layout::done(info_.round)), 0);
        spdlog::info("waiting for the other nodes: {} of {} have finished", done, info_.assignment.nnodes);
      } catch (const Error&) {
        // The watcher reports a lost store.
      }
      reportProgress();
    });
  };
  reportProgress();
  workers_.runner().runUntil([&] { return end_ || storeLost_ || stop_.requested(); });
  progress.cancel();
  workers_.runner().runPending();
}

}  // namespace pltrun

#include "launcher/agent/elastic_agent.h"

#include <spdlog/spdlog.h>

#include <limits>
#include <thread>

#include "base/out_of_descriptors.h"
#include "base/seconds_text.h"
#include "launcher/agent/agent_decisions.h"
#include "launcher/agent/agent_session.h"
#include "launcher/agent/health_gate.h"
#include "launcher/agent/node_blame.h"
#include "launcher/agent/node_exclusion.h"
#include "launcher/agent/round_run.h"
#include "launcher/agent/stop_request.h"
#include "launcher/metrics/round_end_cause.h"
#include "launcher/plan/text_parsing.h"
#include "launcher/stall/restart_progress.h"
#include "pltrun/error.h"
#include "rendezvous/elastic/store_json.h"

// The round loop of one agent: join a round, run it (round_run.cc), then decide with
// decideAfterRound whether the job goes on; a stop signal ends the job on every node.

namespace pltrun {

namespace {

using rdzv::RoundEnd;
using rdzv::RoundInfo;
using Reason = rdzv::RoundEnd::Reason;

// How often an excluded store host looks whether the job has ended.
constexpr std::chrono::milliseconds kClosedPollInterval{500};

// Thrown by pollEvents: a stop signal arrived while no worker group ran.
struct Interrupted {};

// How one round ended for this agent: go on with the next, or end with a status.
struct RoundResult {
  bool finished = false;
  int status = 0;
  std::optional<int> expectedNodes;
};

class ElasticAgent {
 public:
  ElasticAgent(const ResolvedJob& job, RendezvousConnection& connection, AgentWorkers& workers);
  int run();

 private:
  int runRounds();
  void pollEvents();
  bool storeStillAnswers() const;
  void joinAgainAsNewNode();
  void logRoundStart(const RoundInfo& info, MetricsRecorder::Clock::time_point joining);
  RoundResult runRound(const RoundInfo& info);
  void leaveStore(int round, int others, std::chrono::milliseconds hostWait);
  void announceStop(int signal);
  RoundResult afterRound(const RoundInfo& info, const RoundEnd& end, bool reportedHere);
  RoundResult stopWithoutProgress(const RoundInfo& info, const RoundReport& report);
  void writeNoProgressReport(const RoundReport& report, const nlohmann::json& fields);
  RoundResult stopJob(const std::optional<GroupOutcome>& outcome);
  RoundResult leaveExcluded(const RoundInfo& info);
  int hostStoreUntilJobEnds();
  int endOfClosedJob(const rdzv::JobClosed& closed);
  void onSignal(int signal);
  void logRoundEnd(const RoundInfo& info, const RoundEnd& end);

  const ResolvedJob& job_;
  RendezvousConnection& connection_;
  AgentWorkers& workers_;
  StopRequest stop_;                 ///< written by onSignal only
  std::optional<int> currentRound_;  ///< the round whose workers run now
  bool stopAnnounced_ = false;
  RestartProgress progress_;  ///< this node's ranks' counters over the rounds it ran
  NodeBlame blame_;           ///< the rounds this node's workers ended, in a row
  HealthGate health_;         ///< checked before each join
};

ElasticAgent::ElasticAgent(const ResolvedJob& job, RendezvousConnection& connection, AgentWorkers& workers)
    : job_(job),
      connection_(connection),
      workers_(workers),
      progress_(job.config.maxNoProgressRestarts),
      blame_(job.config.maxNodeBlames),
      health_(job, connection, workers.events()) {
  workers_.listen([this](int signal) { onSignal(signal); });
}

// Stop signals stop the job on every node (the runner then passes them to the running
// workers, if any); SIGUSR1/SIGUSR2 are only forwarded.
void ElasticAgent::onSignal(int signal) {
  if (isStopSignal(signal) && stop_.record(signal)) announceStop(signal);
}

// The signal handler runs whenever the event loop does: while workers run, and between the
// waits of a rendezvous.
void ElasticAgent::pollEvents() {
  workers_.runner().runPending();
  if (stop_.requested()) throw Interrupted{};
}

int ElasticAgent::run() {
  // torchrun's default id is "none": said so, since "run none" alone reads like an error.
  spdlog::info(
      "run {}{}: joining an elastic job of {} node(s) through {} ({} here)", job_.runId,
      job_.config.runId.empty() ? " (the default id; give every node the same --rdzv-id)" : "",
      connection_.settings().minNodes == connection_.settings().maxNodes
          ? std::to_string(connection_.settings().maxNodes)
          : std::to_string(connection_.settings().minNodes) + " to " + std::to_string(connection_.settings().maxNodes),
      connection_.storeName(), countedNoun(job_.layout.workerCount, "worker"));
  int status = 1;
  try {
    status = runRounds();
  } catch (const Error& error) {
    // Anything the store could not do, mid-rendezvous or mid-round: its host is gone, or
    // unreachable. The workers (if any) were killed when their group went away.
    if (error.code() != ErrorCode::Network && error.code() != ErrorCode::Timeout &&
        error.code() != ErrorCode::Protocol) {
      throw;
    }
    if (dynamic_cast<const rdzv::MalformedJobState*>(&error) != nullptr) {
      spdlog::error(
          "the rendezvous state of run {} in {} is not what pltrun writes ({}); is "
          "another job using the same --rdzv-id? This node stops",
          job_.runId, connection_.storeName(), error.what());
    } else if (storeStillAnswers()) {
      spdlog::error(
          "the rendezvous store, {}, closed this agent's connection ({}) but still answers: it refused a request, "
          "most likely because it is full (its key or byte limit: --max-keys, --max-store-bytes; its log names "
          "the limit), so this node stops",
          connection_.storeName(), error.what());
    } else if (saysOutOfDescriptors(error.what())) {
      // Every store is unreachable alike then: the cause to name is this process, not etcd's quorum.
      spdlog::error("lost the rendezvous store, {}: {} ({}), so this node stops", connection_.storeName(),
                    descriptorAdvice(), error.what());
    } else {
      spdlog::error("lost the rendezvous store, {} ({}); {}, so this node stops", connection_.storeName(), error.what(),
                    connection_.onEtcd() ? "check that a quorum of its members is up"
                                         : "the agent that hosted it has ended or cannot be reached");
    }
  }
  workers_.events().write("job_finished", {{"status", status}});
  workers_.metrics().update([](JobMetrics& metrics) { metrics.jobFinished(MetricsRecorder::Clock::now()); });
  return status;
}

// Torch's protocol can refuse a write (a full store) only by closing the connection: a store
// that answers a new one did not go away.
bool ElasticAgent::storeStillAnswers() const {
  if (connection_.onEtcd()) return false;
  try {
    connection_.connectWatcherStore()->check({"pltrun/probe"});
    return true;
  } catch (const Error&) {
    return false;
  }
}

int ElasticAgent::runRounds() {
  int lastRound = -1;
  std::optional<int> expectedNodes;
  for (;;) {
    // etcd: a round that ended while this node was cut off may have cost it its lease.
    if (lastRound >= 0 && connection_.confirmLeaseLost()) joinAgainAsNewNode();
    RoundInfo info;
    MetricsRecorder::Clock::time_point joining;
    try {
      if (auto left = health_.waitUntilHealthy([this] { pollEvents(); })) return *left;  // an unhealthy node stays out
      joining = MetricsRecorder::Clock::now();
      info = connection_.rendezvous().join(lastRound, expectedNodes, [this] { pollEvents(); });
    } catch (const rdzv::JobClosed& closed) {
      return endOfClosedJob(closed);
    } catch (const Interrupted&) {
      return stopJob(std::nullopt).status;
    } catch (const Error&) {
      if (!connection_.confirmLeaseLost()) throw;
      joinAgainAsNewNode();  // cut off while it waited to join: it asks again, with a new lease
      continue;
    }
    lastRound = info.round;
    logRoundStart(info, joining);
    currentRound_ = info.round;
    RoundResult result = runRound(info);
    currentRound_.reset();
    workers_.store().close();  // this round's stragglers lose it too
    if (result.finished) return result.status;
    expectedNodes = result.expectedNodes;
  }
}

// etcd: this agent's lease expired while it could not reach etcd (a cut link, a frozen
// host), so the others have re-formed without it, and its workers are gone (the round's
// watcher killed them, or the round ended). Rather than stop, it comes back as a new node:
// a new lease and agent id, in the next round, or as a spare when the job is at its
// maximum. An outage longer than join_timeout ends it as before (the watcher gives up).
void ElasticAgent::joinAgainAsNewNode() {
  const auto without = connection_.sinceLeaseRenewal();
  spdlog::warn("lease expired after {} s without etcd; joining again as a new node", secondsText(without));
  workers_.events().write("lease_expired", {{"seconds_without_etcd", without.count() / 1000.0}});
  connection_.rejoinAsNewNode();
}

// The round's start in the log, the event log and the metrics (the rendezvous took from
// this node's join to the round's completion).
void ElasticAgent::logRoundStart(const RoundInfo& info, MetricsRecorder::Clock::time_point joining) {
  const auto now = MetricsRecorder::Clock::now();
  workers_.metrics().update([&](JobMetrics& metrics) {
    metrics.rendezvousCompleted(now - joining);
    metrics.attemptStarted(info.round, now);
  });
  const rdzv::NodeAssignment& place = info.assignment;
  spdlog::info("round {}: node rank {} of {} nodes, ranks {}-{} of {}, restart count {}, {} worker failure(s) so far",
               info.round, place.nodeRank, place.nnodes, place.firstRank, place.firstRank + job_.layout.workerCount - 1,
               place.worldSize, info.round, info.failures);
  workers_.events().write("rendezvous_complete", {{"round", info.round},
                                                  {"node_rank", place.nodeRank},
                                                  {"nnodes", place.nnodes},
                                                  {"world_size", place.worldSize},
                                                  {"first_rank", place.firstRank},
                                                  {"restart_count", info.round},
                                                  {"failures", info.failures}});
}

RoundResult ElasticAgent::runRound(const RoundInfo& info) {
  RoundRun round(job_, connection_, workers_, stop_, info);
  const RoundReport report = round.run();
  switch (report.kind) {
    case RoundReport::Kind::Interrupted:
      return stopJob(report.outcome);  // while the round's watcher and workers still exist
    case RoundReport::Kind::StoreLost:
      // etcd told it that its lease is gone: the workers were killed; the loop joins again.
      if (connection_.leaseKnownLost()) return RoundResult{false, 0, std::nullopt};
      spdlog::error(
          "lost the rendezvous store, {} ({}); this node's workers were killed at once, before the "
          "other nodes could re-form without it, and this node stops",
          connection_.storeName(), report.storeLost);
      return RoundResult{true, 1, std::nullopt};
    case RoundReport::Kind::Ended:
      break;
  }
  // Only a round that would be restarted for a worker's failure: other nodes leaving or
  // joining re-form the job without counting against --max-restarts, nor against this.
  const bool restarts = report.end.reason == Reason::WorkerFailed && !report.end.final;
  if (restarts && progress_.stopAfter(info.round, report.highestCounter)) return stopWithoutProgress(info, report);
  const bool othersFailed = restarts && report.reportedHere && otherNodesFailed(connection_, info);
  if (blame_.afterRound(info.round, report.end, report.reportedHere, othersFailed, info.assignment.nnodes)) {
    return leaveExcluded(info);
  }
  return afterRound(info, report.end, report.reportedHere);
}

// This node's ranks passed no earlier round's highest counter in --max-no-progress-restarts
// failed rounds in a row: the whole job stops, on every node, as a stop signal stops it
// (the others, waiting to join the next round, find it closed and end with its status).
// In a data-parallel job every rank's step moves together, so every node whose workers
// beat comes to this in the same round; a node whose workers send no counters never does,
// and learns it from the others.
RoundResult ElasticAgent::stopWithoutProgress(const RoundInfo& info, const RoundReport& report) {
  const std::string line = progress_.line("round");
  nlohmann::json fields = progress_.json();
  fields["round"] = info.round;
  fields["last_failure"] = report.end.describe();
  workers_.events().write("no_progress", fields);
  writeNoProgressReport(report, fields);
  RoundEnd stopped;
  stopped.reason = Reason::Stopped;
  stopped.host = connection_.host();
  stopped.message = line;
  stopped.status = kNoProgressExitStatus;
  stopped.failures = report.end.failures;
  stopped.final = true;
  try {
    connection_.rendezvous().closeJob(stopped);
    // The others may be waiting for the next round to form already: it ends, and they find
    // the job closed.
    connection_.rendezvous().endRound(info.round + 1, stopped);
  } catch (const Error& error) {
    spdlog::warn("could not tell the other nodes that this job stops: {}", error.what());
  }
  spdlog::error("{}", line);
  leaveStore(info.round, info.assignment.nnodes - 1, kFailureExitBarrier);
  return RoundResult{true, kNoProgressExitStatus, std::nullopt};
}

// failure.json: this node's first failed worker of the round when it had one (else null:
// the failure was on another node, named in no_progress.last_failure), and the verdict.
void ElasticAgent::writeNoProgressReport(const RoundReport& report, const nlohmann::json& fields) {
  const RunFile file = workers_.directory().failureReport();
  if (report.outcome && report.outcome->rootCause) {
    printFailureReport(*report.outcome->rootCause, report.outcome->others, file, {{"no_progress", fields}});
    return;
  }
  writeFailureWithoutRootCause(file, {{"no_progress", fields}});
}

// This node's workers ended --max-node-blames rounds in a row while the others' ran: it
// leaves the job for the rest of the run, and the others re-form without it (a waiting
// spare takes its place) while the minimum of --nnodes allows. The round has ended already
// for every node; the others expect this one in the next and, not finding it, close the
// round at the last call. The store's host cannot leave: it keeps the store, running no
// workers, until the job ends.
RoundResult ElasticAgent::leaveExcluded(const RoundInfo& info) {
  excludeThisNode(connection_, workers_.events(), job_.runId, blame_, info.round);
  if (connection_.hostsStore()) return RoundResult{true, hostStoreUntilJobEnds(), std::nullopt};
  return RoundResult{true, kExcludedExitStatus, std::nullopt};
}

// The excluded store host, until the job it hosts ends (a stop signal stops the job, as
// anywhere else); then its exit barrier, for the members of the job's last round.
int ElasticAgent::hostStoreUntilJobEnds() {
  spdlog::info("this node hosts the rendezvous store, {}: it keeps it, running no workers, until the job ends",
               connection_.storeName());
  const std::string closedKey = connection_.rendezvous().key(rdzv::layout::kClosed);
  try {
    while (!connection_.store().check({closedKey})) {
      pollEvents();
      std::this_thread::sleep_for(kClosedPollInterval);
    }
  } catch (const Interrupted&) {
    return stopJob(std::nullopt).status;
  }
  const RoundEnd end = RoundEnd::fromStoreValue(closedKey, connection_.store().get(closedKey, kFailureExitBarrier));
  spdlog::info("the job has ended: {}", end.describe());
  try {
    const std::string roundKey = connection_.rendezvous().key(rdzv::layout::kRound);
    const int last = rdzv::storedDecimal(roundKey, connection_.store().get(roundKey, kFailureExitBarrier), 0,
                                         std::numeric_limits<int>::max(), "round");
    connection_.rendezvous().waitForOthersToLeave(last, connection_.rendezvous().membersOf(last), kFailureExitBarrier);
  } catch (const Error& error) {
    spdlog::debug("no exit barrier for the last round: {}", error.what());
  }
  return kExcludedExitStatus;
}

void ElasticAgent::logRoundEnd(const RoundInfo& info, const RoundEnd& end) {
  nlohmann::json fields = {{"round", info.round},
                           {"reason", RoundEnd::reasonName(end.reason)},
                           {"host", end.host},
                           {"message", end.message}};
  if (end.reason == Reason::NodeJoined) workers_.events().write("node_joined", fields);
  if (end.reason == Reason::NodeLost) workers_.events().write("node_left", fields);
  if (roundEndRestarts(end)) {
    fields["failures"] = end.failures;
    workers_.events().write("restart", fields);
    // Every node counts the cause the failed worker's node wrote (round_end_cause.h).
    workers_.metrics().update(
        [&end](JobMetrics& metrics) { metrics.restarted(restartCauseOfRoundEnd(end), MetricsRecorder::Clock::now()); });
  }
}

RoundResult ElasticAgent::afterRound(const RoundInfo& info, const RoundEnd& end, bool reportedHere) {
  logRoundEnd(info, end);
  const int nnodes = info.assignment.nnodes;
  const AfterRound next =
      decideAfterRound(end, nnodes, connection_.settings().maxNodes, connection_.settings().closeTimeout);
  if (end.reason == Reason::Succeeded) {
    spdlog::info("all {} nodes succeeded", nnodes);
  } else if (end.final && end.reason == Reason::Stopped) {
    spdlog::warn("the job was stopped: {}", end.describe());
  } else if (end.final && !reportedHere) {
    spdlog::error("the job failed: {}", end.describe());
  }
  if (end.final && end.reason == Reason::WorkerFailed) {
    spdlog::error("no restart left: {} worker failure(s), --max-restarts {}", end.failures, job_.config.maxRestarts);
  }
  if (next.finished) {
    leaveStore(info.round, nnodes - 1, next.exitBarrier);
    return RoundResult{true, next.status, std::nullopt};
  }
  if (end.reason == Reason::WorkerFailed) {
    spdlog::warn("round {} ended: {}; restarting every node's workers ({} of {} restarts)", info.round, end.describe(),
                 end.failures, job_.config.maxRestarts);
  } else {
    spdlog::warn("round {} ended: {}; re-forming the job", info.round, end.describe());
  }
  return RoundResult{false, 0, next.expectedNodes};
}

// This agent was told to stop: the whole job stops, as torchrun's agents do when one of
// them is interrupted (Ctrl-C on one node ends the job everywhere).
RoundResult ElasticAgent::stopJob(const std::optional<GroupOutcome>& outcome) {
  const int signal = stopSignal(stop_.signal(), outcome);
  announceStop(signal);
  if (outcome && outcome->rootCause) {
    printFailureReport(*outcome->rootCause, outcome->others, workers_.directory().failureReport());
  }
  spdlog::warn("stopped by {}", signalName(signal));
  if (std::optional<int> member = connection_.rendezvous().lastMemberRound()) {
    leaveStore(*member, -1, kFailureExitBarrier);
  }
  return RoundResult{true, 128 + signal, std::nullopt};
}

int ElasticAgent::endOfClosedJob(const rdzv::JobClosed& closed) {
  const RoundEnd& end = closed.end;
  const int status = closedJobStatus(end, closed.beforeJoining);
  if (end.reason == Reason::Succeeded) {
    if (closed.beforeJoining) {
      spdlog::error("run {} has already finished in {}; give this job a new --rdzv-id", job_.runId,
                    connection_.storeName());
    } else {
      spdlog::info("the job has finished; nothing left to do on this node");
    }
    return status;
  }
  if (end.reason == Reason::TimedOut) {
    spdlog::error(
        "rendezvous timed out: {}; start the missing nodes (pltrun with the same --rdzv-endpoint and "
        "--rdzv-id), or lower the minimum of --nnodes",
        end.message);
    reportExcludedNodes(connection_, workers_.directory().failureReport());
  } else {
    spdlog::error("the job is over: {}", end.describe());
  }
  if (std::optional<int> member = connection_.rendezvous().lastMemberRound())
    leaveStore(*member, -1, kFailureExitBarrier);
  return status;
}

// The exit barrier: the store's host waits (up to `hostWait`) until `others` agents of
// `round` have left (-1: everyone else who took a slot), so that none loses the store
// while it still reads why the job ended; every other agent says it leaves.
void ElasticAgent::leaveStore(int round, int others, std::chrono::milliseconds hostWait) {
  try {
    if (connection_.hostsStore()) {
      if (others < 0) others = connection_.rendezvous().membersOf(round) - 1;
      connection_.rendezvous().waitForOthersToLeave(round, others, hostWait);
    } else {
      connection_.rendezvous().leave(round);
    }
  } catch (const Error&) {
    // The store is gone already: nobody is left to tell.
  }
}

// The first stop signal: the job ends on every node, announced before this node's workers
// are stopped, so the others stop theirs at the same time (torchrun's agents also end the
// whole job when one is interrupted).
void ElasticAgent::announceStop(int signal) {
  if (stopAnnounced_) return;
  stopAnnounced_ = true;
  RoundEnd stopped;
  stopped.reason = Reason::Stopped;
  stopped.host = connection_.host();
  stopped.message = "received " + signalName(signal);
  stopped.status = 128 + signal;
  stopped.final = true;
  try {
    connection_.rendezvous().closeJob(stopped);
    if (currentRound_) connection_.rendezvous().endRound(*currentRound_, stopped);
  } catch (const Error& error) {
    spdlog::warn("could not tell the other nodes that this job stops: {}", error.what());
  }
}

}  // namespace

int runElasticAgent(const ResolvedJob& job) {
  AgentSession session(job);
  return runElasticAgent(session);
}

int runElasticAgent(AgentSession& session) {
  return ElasticAgent(session.job(), session.connection(), session.workers()).run();
}

}  // namespace pltrun

#include "launcher/agent/elastic_agent.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "launcher/agent/agent_decisions.h"
#include "launcher/net/attempt_store.h"
#include "launcher/net/host_identity.h"
#include "launcher/net/rendezvous_host.h"
#include "launcher/plan/text_parsing.h"
#include "launcher/process/attempt_plan.h"
#include "launcher/process/event_log.h"
#include "launcher/process/group_runner.h"
#include "launcher/process/orphan_guard.h"
#include "launcher/process/run_directory.h"
#include "launcher/process/worker_group.h"
#include "pltrun/error.h"
#include "pltrun/tcp_store.h"
#include "rendezvous/elastic/elastic_rendezvous.h"
#include "rendezvous/elastic/round_watcher.h"
#include "rendezvous/store/secret_file.h"
#include "rendezvous/store/store_table.h"

namespace pltrun {

namespace {

using rdzv::RoundEnd;
using rdzv::RoundInfo;
using Reason = rdzv::RoundEnd::Reason;

// How long a connection to a store that was up may take to re-make.
constexpr std::chrono::milliseconds kReconnectTimeout{2000};
// How often an agent whose workers are done says how many nodes have finished.
constexpr std::chrono::seconds kProgressInterval{10};

// A port read from the store: anything else there is a clear error naming the key.
int parsePortValue(const std::string& key, const std::string& value) {
  const std::optional<long long> port = parseInteger(value);
  if (!port || *port < 1 || *port > 65535) {
    throw Error(ErrorCode::Protocol, "rendezvous: the store holds " + rdzv::printableKey(value) + " at " +
                                         rdzv::printableKey(key) + ", not the port pltrun writes there");
  }
  return static_cast<int>(*port);
}

// How long the round watcher waits for any one reply before it declares the store lost.
std::chrono::milliseconds fenceDeadline(const RendezvousSettings& settings) {
  const auto othersNotice = settings.keepAliveInterval * std::max(1, settings.keepAliveMaxAttempt - 1);
  return std::max(std::chrono::milliseconds(200),
                  std::chrono::duration_cast<std::chrono::milliseconds>(othersNotice / 3));
}

// A stop signal arrived while no worker group was running.
struct Interrupted {};

// How one round ended for this agent: go on with the next, or end with a status.
struct RoundResult {
  bool finished = false;
  int status = 0;
  std::optional<int> expectedNodes;
};

class ElasticAgent {
 public:
  explicit ElasticAgent(const ElasticJob& job);
  int run();

 private:
  int runRounds();
  RoundResult runRound(const RoundInfo& info);
  void waitForOtherNodes(const RoundInfo& info, std::optional<RoundEnd>& ended, std::optional<std::string>& storeLost);
  void leaveStore(int round, int others, std::chrono::milliseconds hostWait);
  void announceStop(int signal);
  RoundResult afterRound(const RoundInfo& info, const RoundEnd& end, bool reportedHere);
  RoundResult stopJob(const std::optional<GroupOutcome>& outcome);
  int endOfClosedJob(const rdzv::JobClosed& closed);
  NodePlacement placementFor(const RoundInfo& info);
  std::unique_ptr<TcpStore> connectStore() const;
  std::unique_ptr<TcpStore> connectWatcherStore() const;
  std::string refusedStoreAdvice() const;
  void pollEvents();
  void onSignal(int signal);
  void logRoundEnd(const RoundInfo& info, const RoundEnd& end);
  GroupSettings groupSettings(int round);

  const ElasticJob& job_;
  const RendezvousSettings& settings_;
  const std::string host_;
  const std::string agentId_;
  OrphanGuard guard_;  // before any thread or worker exists
  std::unique_ptr<HostedStore> hosted_;
  // The workers' store in the rounds where this node is rank 0: hosted by this agent (the
  // agent store), new every round and closed when the round ends, or only its port chosen
  // for rank 0's worker (--no-agent-store).
  std::unique_ptr<AttemptStore> workersStore_;
  TcpStoreOptions storeOptions_;
  std::unique_ptr<TcpStore> store_;
  std::unique_ptr<rdzv::ElasticRendezvous> rendezvous_;
  RunDirectory directory_;
  EventLog events_;
  boost::asio::io_context context_;
  GroupRunner runner_{context_};
  std::optional<int> currentRound_;  ///< the round whose workers run now
  int interruptSignal_ = 0;
  bool stopAnnounced_ = false;
};

ElasticAgent::ElasticAgent(const ElasticJob& job)
    : job_(job),
      settings_(job.config.rdzv),
      host_(localHostName()),
      agentId_(host_ + ":" + std::to_string(getpid()) + ":" + randomHexId()),
      directory_(job.config, job.runId, host_ + "_" + std::to_string(getpid())),
      events_(directory_.keepsLogs() ? std::optional<std::string>((directory_.root() / "events.jsonl").string())
                                     : std::nullopt) {
  const std::string secret =
      settings_.secretFile.empty() ? "" : rdzv::readSecretFile(settings_.secretFile, "secret_file");
  hosted_ = hostRendezvousStoreIfOurs(settings_, secret, job_.runId);
  storeOptions_.secret = secret;
  storeOptions_.authContext = job_.runId;
  storeOptions_.host = settings_.endpointHost;
  storeOptions_.port = hosted_ ? hosted_->port() : settings_.endpointPort;
  if (storeOptions_.port == 0) {
    throw Error(ErrorCode::InvalidArgument,
                "--rdzv-endpoint " + settings_.endpointHost +
                    ":0: only the agent that hosts the store can pick its port; give the other agents the port the "
                    "host printed");
  }
  storeOptions_.connectTimeout = settings_.readTimeout;
  storeOptions_.timeout = settings_.readTimeout;
  if (hosted_) {
    spdlog::info("rendezvous store for run {} listening on {}:{}", job_.runId, listenAddressFor(settings_.endpointHost),
                 hosted_->port());
  }
  if (secret.empty() && !isLoopbackAddress(listenAddressFor(settings_.endpointHost))) {
    spdlog::warn(
        "the rendezvous at {}:{} is not authenticated: anyone who can reach it can end this job or join it; "
        "give every agent the same --rdzv-conf secret_file=PATH or PLTRUN_SECRET_FILE (docs/SECURITY.md)",
        settings_.endpointHost, storeOptions_.port);
  }
  try {
    connectStore();  // waits up to read_timeout for the store's host to come up
  } catch (const Error& error) {
    if (error.code() == ErrorCode::PermissionDenied) throw Error(error.code(), error.what() + refusedStoreAdvice());
    throw Error(error.code(), std::string(error.what()) +
                                  "; start pltrun on the endpoint's host first (it hosts the store), or check "
                                  "--rdzv-endpoint");
  }
  // From now on the store is known to be up: a connection that breaks means its host is
  // gone, and reconnecting gets a short try only, so an agent never hangs on a dead store.
  storeOptions_.connectTimeout = kReconnectTimeout;
  store_ = connectStore();

  rdzv::NodeDescriptor self;
  self.agentId = agentId_;
  self.host = host_;
  self.addr = settings_.localAddr;
  if (self.addr.empty()) self.addr = localAddressTowards(settings_.endpointHost, storeOptions_.port);
  if (self.addr.empty()) self.addr = host_;
  self.localWorldSize = job_.layout.workerCount;
  self.rankHint = settings_.nodeRankHint;
  rdzv::ElasticRendezvousOptions options;
  options.runId = job_.runId;
  options.minNodes = settings_.minNodes;
  options.maxNodes = settings_.maxNodes;
  options.joinTimeout = settings_.joinTimeout;
  options.lastCallTimeout = settings_.lastCallTimeout;
  options.closeTimeout = settings_.closeTimeout;
  options.pollInterval =
      std::min(options.pollInterval, std::max(settings_.lastCallTimeout / 4, std::chrono::milliseconds(10)));
  rendezvous_ = std::make_unique<rdzv::ElasticRendezvous>(*store_, options, self);
  // Created here, before any round: its listeners open only when this node is rank 0. It
  // listens on the address this node joined with (the workers' MASTER_ADDR) when that is a
  // literal of this machine; on every interface for a host name (as torch does) or for an
  // address this machine does not own (--local-addr behind NAT). Rank 0's worker's port is
  // picked on that address (pickFreePort falls back to every interface the same way).
  if (job_.config.agentStore) {
    workersStore_ = std::make_unique<AttemptStore>(AttemptStore::Host::Launcher,
                                                   isLocalHost(self.addr) ? listenAddressFor(self.addr) : "0.0.0.0");
  } else {
    workersStore_ = std::make_unique<AttemptStore>(AttemptStore::Host::RankZeroWorker, self.addr);
  }

  runner_.listen([this](int signal) { onSignal(signal); });
}

// Stop signals stop the job on every node (the runner then passes them to the running
// workers, if any); SIGUSR1/SIGUSR2 are only forwarded.
void ElasticAgent::onSignal(int signal) {
  const bool stop = signal != SIGUSR1 && signal != SIGUSR2;
  if (stop && interruptSignal_ == 0) {
    interruptSignal_ = signal;
    announceStop(signal);
  }
}

std::unique_ptr<TcpStore> ElasticAgent::connectStore() const { return std::make_unique<TcpStore>(storeOptions_); }

// What to do when the store at the endpoint failed the shared-secret handshake. When this
// machine should have hosted it, another process holds the port (a squatter, or a store of
// another job): this agent refuses it rather than take its word for the job's state.
std::string ElasticAgent::refusedStoreAdvice() const {
  if (!hosted_ && isLocalHost(settings_.endpointHost)) {
    return "; this machine should host the rendezvous store, but another process holds port " +
           std::to_string(storeOptions_.port) +
           " and is not this job's store: stop it, or choose another port for "
           "--rdzv-endpoint";
  }
  return "; give every agent of the job the same --rdzv-conf secret_file (or PLTRUN_SECRET_FILE) and --rdzv-id";
}

// The watcher's connection must notice a cut-off store well before the other nodes notice
// this node missing, so that its workers are killed before the job re-forms without it
// (fencing: two generations of the job never run at once). The others need at least
// (keep_alive_max_attempt - 1) heartbeat intervals; the watcher makes a round trip every
// 250 ms, and gives up on one that takes a third of that.
std::unique_ptr<TcpStore> ElasticAgent::connectWatcherStore() const {
  TcpStoreOptions options = storeOptions_;
  options.timeout = fenceDeadline(settings_);
  return std::make_unique<TcpStore>(options);
}

// The signal handler runs whenever the event loop does: while workers run, and between the
// waits of a rendezvous (pollEvents).
void ElasticAgent::pollEvents() {
  runner_.runPending();
  if (interruptSignal_ != 0) throw Interrupted{};
}

GroupSettings ElasticAgent::groupSettings(int round) {
  GroupSettings settings;
  settings.attempt = round;
  settings.termTimeout = job_.config.termTimeout;
  settings.host = host_;
  settings.onWorkerStarted = [this, round](const WorkerSpec& spec, pid_t pid) {
    events_.write("worker_started",
                  {{"round", round}, {"rank", spec.rank}, {"local_rank", spec.localRank}, {"pid", pid}});
  };
  settings.onWorkerExited = [this, round](const WorkerSpec& spec, pid_t pid, const ProcessEnd& end) {
    nlohmann::json fields = {{"round", round}, {"rank", spec.rank},           {"local_rank", spec.localRank},
                             {"pid", pid},     {"status", end.shellStatus()}, {"description", end.describe()}};
    if (end.signal != 0)
      fields["signal"] = end.signal;
    else
      fields["exit_code"] = end.exitCode;
    events_.write("worker_exited", fields);
  };
  return settings;
}

int ElasticAgent::run() {
  spdlog::info("run {}: joining an elastic job of {} node(s) through the store at {}:{} ({} workers here)", job_.runId,
               settings_.minNodes == settings_.maxNodes
                   ? std::to_string(settings_.maxNodes)
                   : std::to_string(settings_.minNodes) + " to " + std::to_string(settings_.maxNodes),
               storeOptions_.host, storeOptions_.port, job_.layout.workerCount);
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
    if (error.code() == ErrorCode::Protocol && std::string_view(error.what()).rfind("rendezvous:", 0) == 0) {
      spdlog::error(
          "the rendezvous state of run {} in the store at {}:{} is not what pltrun writes ({}); is "
          "another job using the same --rdzv-id? This node stops",
          job_.runId, storeOptions_.host, storeOptions_.port, error.what());
    } else {
      spdlog::error(
          "lost the rendezvous store at {}:{} ({}); the agent that hosted it has ended or cannot be "
          "reached, so this node stops",
          storeOptions_.host, storeOptions_.port, error.what());
    }
  }
  events_.write("job_finished", {{"status", status}});
  return status;
}

int ElasticAgent::runRounds() {
  int lastRound = -1;
  std::optional<int> expectedNodes;
  for (;;) {
    RoundInfo info;
    try {
      info = rendezvous_->join(lastRound, expectedNodes, [this] { pollEvents(); });
    } catch (const rdzv::JobClosed& closed) {
      return endOfClosedJob(closed);
    } catch (const Interrupted&) {
      return stopJob(std::nullopt).status;
    }
    lastRound = info.round;
    const rdzv::NodeAssignment& place = info.assignment;
    spdlog::info("round {}: node rank {} of {} nodes, ranks {}-{} of {}, restart count {}, {} worker failure(s) so far",
                 info.round, place.nodeRank, place.nnodes, place.firstRank,
                 place.firstRank + job_.layout.workerCount - 1, place.worldSize, info.round, info.failures);
    events_.write("rendezvous_complete", {{"round", info.round},
                                          {"node_rank", place.nodeRank},
                                          {"nnodes", place.nnodes},
                                          {"world_size", place.worldSize},
                                          {"first_rank", place.firstRank},
                                          {"restart_count", info.round},
                                          {"failures", info.failures}});
    currentRound_ = info.round;
    RoundResult result = runRound(info);
    currentRound_.reset();
    workersStore_->close();  // this round's stragglers lose it too
    if (result.finished) return result.status;
    expectedNodes = result.expectedNodes;
  }
}

// The workers' store is node rank 0's, at the address it joined with, on a port it
// publishes in the round's keys: the agent's own store, new this round (the agent store),
// or the one rank 0's worker opens (--no-agent-store, torchrun's way). Either way the
// workers never reach the rendezvous store and no round sees another's keys.
NodePlacement ElasticAgent::placementFor(const RoundInfo& info) {
  NodePlacement node;
  node.nodeRank = info.assignment.nodeRank;
  node.nnodes = info.assignment.nnodes;
  node.worldSize = info.assignment.worldSize;
  node.firstRank = info.assignment.firstRank;
  node.useAgentStore = workersStore_->hostedHere();
  node.masterAddr = info.assignment.rank0Addr;
  const std::string key = rendezvous_->roundKey(info.round, "master_port");
  if (info.assignment.nodeRank == 0) {
    node.masterPort = workersStore_->openNext();
    store_->set(key, std::to_string(node.masterPort));
  } else {
    node.masterPort = parsePortValue(key, store_->get(key, settings_.closeTimeout));
  }
  return node;
}

RoundResult ElasticAgent::runRound(const RoundInfo& info) {
  const RunPlan plan{job_.config, job_.inherited, directory_, job_.command, job_.layout, job_.runId, host_};
  NodePlacement placement;
  try {
    placement = placementFor(info);
  } catch (const Error& error) {
    // Rank 0's node never said which port its workers' store uses.
    RoundEnd failed;
    failed.reason = Reason::RendezvousFailed;
    failed.host = host_;
    failed.message = std::string("no store port from rank 0's node: ") + error.what();
    return afterRound(info, rendezvous_->endRound(info.round, failed), false);
  }
  const std::vector<WorkerSpec> specs = workerSpecsFor(plan, info.round, placement);

  std::optional<RoundEnd> ended;
  std::optional<std::string> storeLost;
  bool reportedHere = false;
  GroupSettings settings = groupSettings(info.round);
  // The first failure is announced at once, before this node's workers are stopped: the
  // other nodes stop theirs meanwhile, and the report stays with the node that failed.
  settings.onRootCause = [&](const WorkerSpec& spec, pid_t pid, const ProcessEnd& end) {
    if (ended || storeLost) return;
    RoundEnd failure;
    failure.host = host_;
    failure.status = end.shellStatus();
    failure.message = "rank " + std::to_string(spec.rank) + " (local rank " + std::to_string(spec.localRank) +
                      ", pid " + std::to_string(pid) + ") ended with " + end.describe();
    try {
      ended = rendezvous_->reportWorkerFailure(info.round, failure, job_.config.maxRestarts);
      reportedHere = ended->reason == Reason::WorkerFailed && ended->host == host_ && ended->message == failure.message;
    } catch (const Error& error) {
      storeLost = error.what();
    }
  };
  WorkerGroup group(context_, runner_.console(), guard_, settings);
  runner_.start(group, specs);
  GroupOutcome outcome;
  {
    rdzv::RoundWatcherSettings watch;
    watch.keepAliveInterval = settings_.keepAliveInterval;
    watch.keepAliveMaxAttempt = settings_.keepAliveMaxAttempt;
    rdzv::RoundWatcher watcher(
        connectWatcherStore(), *rendezvous_, info, watch,
        [&](const RoundEnd& end) {
          boost::asio::post(context_, [&, end] {
            if (!ended) ended = end;
            group.stop();
          });
        },
        [&](const std::string& message) {
          boost::asio::post(context_, [&, message] {
            storeLost = message;
            // Fencing: the others may re-form without this node any moment now.
            group.kill();
          });
        });
    outcome = runner_.waitForGroup();

    if (interruptSignal_ != 0 || outcome.kind == GroupOutcome::Kind::Interrupted) {
      return stopJob(outcome);
    }
    if (reportedHere && ended->final && outcome.rootCause) {
      printFailureReport(*outcome.rootCause, outcome.others, directory_.failureReportPath());
    }
    if (!ended && !storeLost && outcome.kind == GroupOutcome::Kind::Succeeded) {
      waitForOtherNodes(info, ended, storeLost);
      if (interruptSignal_ != 0) return stopJob(std::nullopt);
    }
  }
  // The watcher's thread has ended: run what it posted while `group` still exists.
  runner_.runPending();
  if (storeLost && !ended) {
    spdlog::error(
        "lost the rendezvous store at {}:{} ({}); this node's workers were killed at once, before the "
        "other nodes could re-form without it, and this node stops",
        storeOptions_.host, storeOptions_.port, *storeLost);
    return RoundResult{true, 1, std::nullopt};
  }
  return afterRound(info, *ended, reportedHere);
}

// This node's workers all succeeded: it says so, then waits for the round's end (every
// node done, or a failure elsewhere that restarts everyone), saying who is still running.
void ElasticAgent::waitForOtherNodes(const RoundInfo& info, std::optional<RoundEnd>& ended,
                                     std::optional<std::string>& storeLost) {
  try {
    rendezvous_->reportSucceeded(info);
  } catch (const Error& error) {
    storeLost = error.what();
    return;
  }
  spdlog::info("this node's {} workers succeeded; waiting for the other nodes", job_.layout.workerCount);
  boost::asio::steady_timer progress(context_);
  std::function<void()> reportProgress = [&] {
    progress.expires_after(kProgressInterval);
    progress.async_wait([&](boost::system::error_code error) {
      if (error || ended || storeLost) return;
      try {
        const auto done = store_->add(rendezvous_->roundKey(info.round, "done"), 0);
        spdlog::info("waiting for the other nodes: {} of {} have finished", done, info.assignment.nnodes);
      } catch (const Error&) {
        // The watcher reports a lost store.
      }
      reportProgress();
    });
  };
  reportProgress();
  runner_.runUntil([&] { return ended || storeLost || interruptSignal_ != 0; });
  progress.cancel();
  runner_.runPending();
}

void ElasticAgent::logRoundEnd(const RoundInfo& info, const RoundEnd& end) {
  nlohmann::json fields = {{"round", info.round},
                           {"reason", RoundEnd::reasonName(end.reason)},
                           {"host", end.host},
                           {"message", end.message}};
  if (end.reason == Reason::NodeJoined) events_.write("node_joined", fields);
  if (end.reason == Reason::NodeLost) events_.write("node_left", fields);
  if (!end.final && end.reason != Reason::Succeeded) {
    fields["failures"] = end.failures;
    events_.write("restart", fields);
  }
}

RoundResult ElasticAgent::afterRound(const RoundInfo& info, const RoundEnd& end, bool reportedHere) {
  logRoundEnd(info, end);
  const int nnodes = info.assignment.nnodes;
  const AfterRound next = decideAfterRound(end, nnodes, settings_.maxNodes, settings_.closeTimeout);
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
  const int signal = stopSignal(interruptSignal_, outcome);
  announceStop(signal);
  if (outcome && outcome->rootCause) {
    printFailureReport(*outcome->rootCause, outcome->others, directory_.failureReportPath());
  }
  spdlog::warn("stopped by {}", signalName(signal));
  if (std::optional<int> member = rendezvous_->lastMemberRound()) {
    leaveStore(*member, -1, kFailureExitBarrier);
  }
  return RoundResult{true, 128 + signal, std::nullopt};
}

int ElasticAgent::endOfClosedJob(const rdzv::JobClosed& closed) {
  const RoundEnd& end = closed.end;
  const int status = closedJobStatus(end, closed.beforeJoining);
  if (end.reason == Reason::Succeeded) {
    if (closed.beforeJoining) {
      spdlog::error("run {} has already finished in the store at {}:{}; give this job a new --rdzv-id", job_.runId,
                    storeOptions_.host, storeOptions_.port);
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
  } else {
    spdlog::error("the job is over: {}", end.describe());
  }
  if (std::optional<int> member = rendezvous_->lastMemberRound()) leaveStore(*member, -1, kFailureExitBarrier);
  return status;
}

// The exit barrier: the store's host waits (up to `hostWait`) until `others` agents of
// `round` have left (-1: everyone else who took a slot), so that none loses the store
// while it still reads why the job ended; every other agent says it leaves.
void ElasticAgent::leaveStore(int round, int others, std::chrono::milliseconds hostWait) {
  try {
    if (hosted_) {
      if (others < 0) others = rendezvous_->membersOf(round) - 1;
      rendezvous_->waitForOthersToLeave(round, others, hostWait);
    } else {
      rendezvous_->leave(round);
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
  stopped.host = host_;
  stopped.message = "received " + signalName(signal);
  stopped.status = 128 + signal;
  stopped.final = true;
  try {
    rendezvous_->closeJob(stopped);
    if (currentRound_) rendezvous_->endRound(*currentRound_, stopped);
  } catch (const Error& error) {
    spdlog::warn("could not tell the other nodes that this job stops: {}", error.what());
  }
}

}  // namespace

int runElasticAgent(const ElasticJob& job) { return ElasticAgent(job).run(); }

}  // namespace pltrun

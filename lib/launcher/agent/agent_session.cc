#include "launcher/agent/agent_session.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include "base/host_port_text.h"
#include "base/seconds_text.h"
#include "launcher/group/run_events.h"
#include "launcher/net/etcd_access.h"
#include "launcher/net/host_identity.h"
#include "pltrun/error.h"
#include "rendezvous/store/secret_file.h"

namespace pltrun {

namespace {

// How long a connection to a store that was up may take to re-make.
constexpr std::chrono::milliseconds kReconnectTimeout{2000};
constexpr std::chrono::milliseconds kReportEvery{5000};  // a line while a wait goes on
// A TCPStore answers a PING at once; a listener that is no store may never.
constexpr std::chrono::milliseconds kProbeReplyTimeout{5000};

// How long the round watcher waits for any one reply before it declares the store lost.
std::chrono::milliseconds fenceDeadline(const RendezvousSettings& settings) {
  const auto othersNotice = settings.keepAliveInterval * std::max(1, settings.keepAliveMaxAttempt - 1);
  return std::max(std::chrono::milliseconds(200),
                  std::chrono::duration_cast<std::chrono::milliseconds>(othersNotice / 3));
}

}  // namespace

AgentSession::AgentSession(const ResolvedJob& job)
    : job(job),
      settings(job.config.rdzv),
      host(localHostName()),
      agentId(host + ":" + std::to_string(getpid()) + ":" + randomHexId()),
      directory(job.config, job.runId, host + "_" + std::to_string(getpid())),
      events(directory.eventLogPath()) {
  if (directory.keepsLogs()) spdlog::info("worker logs go to {}", directory.root().string());
  events.write("run_started",
               runStartedFields(job.config, job.runId, directory.root().string(), host, job.layout.workerCount));
  if (onEtcd()) {
    connectToEtcd();
  } else {
    connect();
  }
  rdzv::NodeDescriptor self = describeSelf();
  if (onEtcd()) {
    links = std::make_unique<PeerLinkListener>(context, nodeListenAddress(self.addr), agentId);
    self.linkPort = links->port();
  }
  openRendezvous(self);
  prepareWorkersStore(self);
}

AgentSession::AgentSession(const ResolvedJob& job, std::unique_ptr<Store> givenStore,
                           std::function<std::unique_ptr<Store>()> connectWatcher, ProcessRuntime givenRuntime)
    : job(job),
      settings(job.config.rdzv),
      host(localHostName()),
      agentId(host + ":" + std::to_string(getpid()) + ":" + randomHexId()),
      store(std::move(givenStore)),
      directory(job.config, job.runId, host + "_" + std::to_string(getpid())),
      events(std::nullopt),
      runtime(givenRuntime),
      connectWatcher_(std::move(connectWatcher)) {
  storeName = "the store under test";
  const rdzv::NodeDescriptor self = describeSelf();
  openRendezvous(self);
  prepareWorkersStore(self);
}

// Hosts the store when the endpoint is this machine's, then connects to it.
void AgentSession::connect() {
  const std::string secret =
      settings.secretFile.empty() ? "" : rdzv::readSecretFile(settings.secretFile, "secret_file");
  hosted = hostRendezvousStoreIfOurs(settings, secret, job.runId);
  storeOptions.secret = secret;
  storeOptions.authContext = job.runId;
  storeOptions.host = settings.endpointHost;
  storeOptions.port = hosted ? hosted->port() : settings.endpointPort;
  if (storeOptions.port == 0) {
    throw Error(ErrorCode::InvalidArgument,
                "--rdzv-endpoint " + settings.endpointHost +
                    ":0: only the agent that hosts the store can pick its port; give the other agents the port the "
                    "host printed");
  }
  storeName = "the store at " + hostPortText(settings.endpointHost, storeOptions.port);
  storeOptions.connectTimeout = settings.readTimeout;
  storeOptions.timeout = settings.readTimeout;
  if (hosted) {
    spdlog::info("rendezvous store for run {} listening on {}:{}", job.runId, listenAddressFor(settings.endpointHost),
                 hosted->port());
  }
  if (secret.empty() && !isLoopbackAddress(listenAddressFor(settings.endpointHost))) {
    spdlog::warn(
        "the rendezvous at {}:{} is not authenticated: anyone who can reach it can end this job or join it; "
        "give every agent the same --rdzv-conf secret_file=PATH or PLTRUN_SECRET_FILE (docs/SECURITY.md)",
        settings.endpointHost, storeOptions.port);
  }
  std::unique_ptr<TcpStore> probe;
  try {
    probe = std::make_unique<TcpStore>(waitingForTheStore());  // up to read_timeout for the store's host to start
  } catch (const Error& error) {
    if (error.code() == ErrorCode::PermissionDenied) throw Error(error.code(), error.what() + refusedStoreAdvice());
    throw Error(error.code(), std::string(error.what()) +
                                  "; start pltrun on the endpoint's host first (it hosts the store), or check "
                                  "--rdzv-endpoint");
  }
  if (!hosted) requireTcpStore(*probe);  // our own store is served by this thread's loop, not yet running
  // From now on the store is known to be up: a connection that breaks means its host is
  // gone, and reconnecting gets a short try only, so an agent never hangs on a dead store.
  storeOptions.connectTimeout = kReconnectTimeout;
  store = std::make_unique<TcpStore>(storeOptions);
}

// Something that accepts connections on the endpoint's port is not yet a store (a web
// server, another service, a port that is not the one the hosting agent printed): one
// PING, which every TCPStore answers at once, tells them apart before the rendezvous reads
// its silence or its garbage as a lost store.
void AgentSession::requireTcpStore(TcpStore& store) const {
  try {
    store.ping();
  } catch (const Error& error) {
    const std::string how = error.code() == ErrorCode::Protocol  ? "its reply to a PING is not a TCPStore's"
                            : error.code() == ErrorCode::Timeout ? "it accepted the connection but did not answer a "
                                                                   "PING within " +
                                                                       secondsText(kProbeReplyTimeout) + " s"
                                                                 : "it closed the connection at a PING";
    throw Error(ErrorCode::Network, hostPortText(settings.endpointHost, storeOptions.port) +
                                        " answered but is not a TCPStore: " + how +
                                        "; check that --rdzv-endpoint names the port the hosting agent printed");
  }
}

// The first connection to the store, whose host may not be up yet: a wait that says what it
// waits for and for how long, every 5 s that it goes on, and ends at once on a stop signal
// (128 + signal), though the event loop that handles signals does not run yet.
TcpStoreOptions AgentSession::waitingForTheStore() {
  runner.catchSignals();
  TcpStoreOptions options = storeOptions;
  options.timeout = std::min(options.timeout, kProbeReplyTimeout);  // the probe's PING, and no request after
  if (hosted) return options;                                       // our own store: up already
  spdlog::info("waiting up to {} s for {} (the agent on the endpoint's host starts it); Ctrl-C stops",
               secondsText(options.connectTimeout), storeName);
  options.betweenAttempts = [this, next = kReportEvery](std::chrono::milliseconds waited) mutable {
    if (auto signal = runner.pendingStopSignal()) throw StoppedBySignal(*signal, "while waiting for " + storeName);
    if (waited < next) return;
    spdlog::info("still waiting for {} after {} s", storeName, waited.count() / 1000);
    next += kReportEvery;
  };
  return options;
}

// etcd keeps the rendezvous: nothing to host, and the job's keys vanish with this agent's
// lease if it dies. Its ring neighbour links to it each round (peer_link.h).
void AgentSession::connectToEtcd() {
  std::unique_ptr<etcd::EtcdStore> etcdStore = connectEtcdStore(settings, job.runId);
  storeName = "etcd at " + etcdMembersText(settings.etcd);
  connectWatcher_ = [client = etcdStore.get()] { return std::unique_ptr<Store>(client->connect()); };
  store = std::move(etcdStore);
}

// What this node joins with: the address its workers' store is reached at (rank 0's
// MASTER_ADDR), its worker count, and a preferred node rank.
rdzv::NodeDescriptor AgentSession::describeSelf() const {
  rdzv::NodeDescriptor self;
  self.agentId = agentId;
  self.host = host;
  self.name = settings.nodeName;
  self.addr = settings.localAddr;
  if (self.addr.empty()) self.addr = localAddressTowards(settings.endpointHost, storeOptions.port);
  if (self.addr.empty()) self.addr = host;
  self.localWorldSize = job.layout.workerCount;
  self.rankHint = settings.nodeRankHint;
  self.pid = static_cast<int>(getpid());
  self.minNodes = settings.minNodes;
  self.maxNodes = settings.maxNodes;
  self.maxRestarts = job.config.maxRestarts;
  self.keepAliveMs = static_cast<int>(settings.keepAliveInterval.count());
  return self;
}

void AgentSession::openRendezvous(const rdzv::NodeDescriptor& self) {
  rdzv::ElasticRendezvousOptions options;
  options.runId = job.runId;
  options.minNodes = settings.minNodes;
  options.maxNodes = settings.maxNodes;
  options.joinTimeout = settings.joinTimeout;
  options.lastCallTimeout = settings.lastCallTimeout;
  options.closeTimeout = settings.closeTimeout;
  options.expectedHosts = settings.expectedHosts;
  options.pollInterval =
      std::min(options.pollInterval, std::max(settings.lastCallTimeout / 4, std::chrono::milliseconds(10)));
  rendezvous = std::make_unique<rdzv::ElasticRendezvous>(*store, options, self);
}

// Created here, before any round: its listeners open only when this node is rank 0. It
// listens on the address this node joined with (the workers' MASTER_ADDR) when that is a
// literal of this machine; on every interface for a host name (as torch does) or for an
// address this machine does not own (--local-addr behind NAT). Rank 0's worker's port is
// picked on that address (pickFreePort falls back to every interface the same way).
void AgentSession::prepareWorkersStore(const rdzv::NodeDescriptor& self) {
  if (job.config.agentStore) {
    workersStore = std::make_unique<AttemptStore>(AttemptStore::Host::Launcher, nodeListenAddress(self.addr));
  } else {
    workersStore = std::make_unique<AttemptStore>(AttemptStore::Host::RankZeroWorker, self.addr);
  }
}

// What to do when the store at the endpoint failed the shared-secret handshake. When this
// machine should have hosted it, another process holds the port (a squatter, or a store of
// another job): this agent refuses it rather than take its word for the job's state.
std::string AgentSession::refusedStoreAdvice() const {
  if (!hosted && isLocalHost(settings.endpointHost)) {
    return "; this machine should host the rendezvous store, but another process holds port " +
           std::to_string(storeOptions.port) +
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
std::unique_ptr<Store> AgentSession::connectWatcherStore() const {
  if (connectWatcher_) return connectWatcher_();
  TcpStoreOptions options = storeOptions;
  options.timeout = fenceDeadline(settings);
  return std::make_unique<TcpStore>(options);
}

// A node whose stalled workers all wait in collectives leaves the node of the culprit this
// long to end the round with its name: the stalls of one hang are seen within a heartbeat
// interval and a stack dump of each other.
constexpr std::chrono::milliseconds kUnexplainedStallGrace{3000};

GroupSettings AgentSession::groupSettings(int round) {
  GroupSettings group;
  group.attempt = round;
  group.termTimeout = job.config.termTimeout;
  group.host = host;
  group.stallTimeout = job.config.stallTimeout;
  group.stackSignal = supervision.stackSignal();
  group.unexplainedStallGrace = kUnexplainedStallGrace;
  recordWorkerEvents(group, events, {{"round", round}});
  return group;
}

}  // namespace pltrun

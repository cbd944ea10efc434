#include "launcher/agent/rendezvous_connection.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include "base/host_port_text.h"
#include "base/seconds_text.h"
#include "launcher/net/etcd_access.h"
#include "launcher/net/host_identity.h"
#include "pltrun/error.h"
#include "rendezvous/store/server/secret_file.h"

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

RendezvousConnection::RendezvousConnection(const ResolvedJob& job, const std::string& host, const std::string& agentId,
                                           GroupRunner& runner, boost::asio::io_context& context)
    : job_(job), settings_(job.config.rdzv), host_(host), agentId_(agentId) {
  if (onEtcd()) {
    connectToEtcd();
  } else {
    connect(runner);
  }
  rdzv::NodeDescriptor self = describeSelf();
  if (onEtcd()) {
    links_ = std::make_unique<PeerLinkListener>(context, nodeListenAddress(self.addr), agentId_);
    self.linkPort = links_->port();
  }
  openRendezvous(self);
}

RendezvousConnection::RendezvousConnection(const ResolvedJob& job, const std::string& host, const std::string& agentId,
                                           std::unique_ptr<Store> store,
                                           std::function<std::unique_ptr<Store>()> connectWatcher)
    : job_(job),
      settings_(job.config.rdzv),
      host_(host),
      agentId_(agentId),
      storeName_("the store under test"),
      store_(std::move(store)),
      connectWatcher_(std::move(connectWatcher)) {
  openRendezvous(describeSelf());
}

// Hosts the store when the endpoint is this machine's, then connects to it.
void RendezvousConnection::connect(GroupRunner& runner) {
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
  storeName_ = "the store at " + hostPortText(settings_.endpointHost, storeOptions_.port);
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
  std::unique_ptr<TcpStore> probe;
  try {
    probe = std::make_unique<TcpStore>(waitingForTheStore(runner));  // up to read_timeout for the store's host to start
  } catch (const Error& error) {
    if (error.code() == ErrorCode::PermissionDenied) throw Error(error.code(), error.what() + refusedStoreAdvice());
    throw Error(error.code(), std::string(error.what()) +
                                  "; start pltrun on the endpoint's host first (it hosts the store), or check "
                                  "--rdzv-endpoint");
  }
  if (!hosted_) requireTcpStore(*probe);  // our own store is served by this thread's loop, not yet running
  // From now on the store is known to be up: a connection that breaks means its host is
  // gone, and reconnecting gets a short try only, so an agent never hangs on a dead store.
  storeOptions_.connectTimeout = kReconnectTimeout;
  store_ = std::make_unique<TcpStore>(storeOptions_);
}

// Something that accepts connections on the endpoint's port is not yet a store (a web
// server, another service, a port that is not the one the hosting agent printed): one
// PING, which every TCPStore answers at once, tells them apart before the rendezvous reads
// its silence or its garbage as a lost store.
void RendezvousConnection::requireTcpStore(TcpStore& store) const {
  try {
    store.ping();
  } catch (const Error& error) {
    const std::string how = error.code() == ErrorCode::Protocol  ? "its reply to a PING is not a TCPStore's"
                            : error.code() == ErrorCode::Timeout ? "it accepted the connection but did not answer a "
                                                                   "PING within " +
                                                                       secondsText(kProbeReplyTimeout) + " s"
                                                                 : "it closed the connection at a PING";
    throw Error(ErrorCode::Network, hostPortText(settings_.endpointHost, storeOptions_.port) +
                                        " answered but is not a TCPStore: " + how +
                                        "; check that --rdzv-endpoint names the port the hosting agent printed");
  }
}

// The first connection to the store, whose host may not be up yet: a wait that says what it
// waits for and for how long, every 5 s that it goes on, and ends at once on a stop signal
// (128 + signal), though the event loop that handles signals does not run yet.
TcpStoreOptions RendezvousConnection::waitingForTheStore(GroupRunner& runner) {
  runner.catchSignals();
  TcpStoreOptions options = storeOptions_;
  options.timeout = std::min(options.timeout, kProbeReplyTimeout);  // the probe's PING, and no request after
  if (hosted_) return options;                                      // our own store: up already
  spdlog::info("waiting up to {} s for {} (the agent on the endpoint's host starts it); Ctrl-C stops",
               secondsText(options.connectTimeout), storeName_);
  options.betweenAttempts = [this, &runner, next = kReportEvery](std::chrono::milliseconds waited) mutable {
    if (auto signal = runner.pendingStopSignal()) throw StoppedBySignal(*signal, "while waiting for " + storeName_);
    if (waited < next) return;
    spdlog::info("still waiting for {} after {} s", storeName_, waited.count() / 1000);
    next += kReportEvery;
  };
  return options;
}

// etcd keeps the rendezvous: nothing to host, and the job's keys vanish with this agent's
// lease if it dies. Its ring neighbour links to it each round (peer_link.h).
void RendezvousConnection::connectToEtcd() {
  std::unique_ptr<etcd::EtcdStore> etcdStore = connectEtcdStore(settings_, job_.runId);
  storeName_ = "etcd at " + etcdMembersText(settings_.etcd);
  connectWatcher_ = [client = etcdStore.get()] { return std::unique_ptr<Store>(client->connect()); };
  etcd_ = etcdStore.get();
  store_ = std::move(etcdStore);
}

bool RendezvousConnection::leaseKnownLost() const { return etcd_ != nullptr && etcd_->lease().expired(); }

bool RendezvousConnection::confirmLeaseLost() { return etcd_ != nullptr && etcd_->lease().confirmExpired(); }

std::chrono::milliseconds RendezvousConnection::sinceLeaseRenewal() const {
  return etcd_ != nullptr ? etcd_->lease().sinceLastRenewal() : std::chrono::milliseconds(0);
}

// The old rendezvous and store go first (the store's last requests fail quietly on the
// expired lease); the listener stays, greeting the ring neighbour with the new id.
void RendezvousConnection::rejoinAsNewNode() {
  rendezvous_.reset();
  store_.reset();
  etcd_ = nullptr;
  agentId_ = newAgentId(host_);
  connectToEtcd();
  rdzv::NodeDescriptor self = describeSelf();
  if (links_) {
    links_->greetAs(agentId_);
    self.linkPort = links_->port();
  }
  openRendezvous(self);
}

// What this node joins with: the address its workers' store is reached at (rank 0's
// MASTER_ADDR), its worker count, and a preferred node rank.
rdzv::NodeDescriptor RendezvousConnection::describeSelf() const {
  rdzv::NodeDescriptor self;
  self.agentId = agentId_;
  self.host = host_;
  self.name = settings_.nodeName;
  self.addr = settings_.localAddr;
  if (self.addr.empty()) self.addr = localAddressTowards(settings_.endpointHost, storeOptions_.port);
  if (self.addr.empty()) self.addr = host_;
  self.localWorldSize = job_.layout.workerCount;
  self.rankHint = settings_.nodeRankHint;
  self.pid = static_cast<int>(getpid());
  self.minNodes = settings_.minNodes;
  self.maxNodes = settings_.maxNodes;
  self.maxRestarts = job_.config.maxRestarts;
  self.keepAliveMs = static_cast<int>(settings_.keepAliveInterval.count());
  return self;
}

void RendezvousConnection::openRendezvous(const rdzv::NodeDescriptor& self) {
  rdzv::ElasticRendezvousOptions options;
  options.runId = job_.runId;
  options.minNodes = settings_.minNodes;
  options.maxNodes = settings_.maxNodes;
  options.joinTimeout = settings_.joinTimeout;
  options.lastCallTimeout = settings_.lastCallTimeout;
  options.closeTimeout = settings_.closeTimeout;
  options.expectedHosts = settings_.expectedHosts;
  options.pollInterval =
      std::min(options.pollInterval, std::max(settings_.lastCallTimeout / 4, std::chrono::milliseconds(10)));
  rendezvous_ = std::make_unique<rdzv::ElasticRendezvous>(*store_, options, self);
  joinedAddress_ = self.addr;
}

// What to do when the store at the endpoint failed the shared-secret handshake. When this
// machine should have hosted it, another process holds the port (a squatter, or a store of
// another job): this agent refuses it rather than take its word for the job's state.
std::string RendezvousConnection::refusedStoreAdvice() const {
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
std::unique_ptr<Store> RendezvousConnection::connectWatcherStore() const {
  if (connectWatcher_) return connectWatcher_();
  TcpStoreOptions options = storeOptions_;
  options.timeout = fenceDeadline(settings_);
  return std::make_unique<TcpStore>(options);
}

}  // namespace pltrun

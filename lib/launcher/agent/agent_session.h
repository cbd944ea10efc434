#pragma once
// What one elastic agent holds for the whole job, built once before its first round: the
// connection to the rendezvous (the store it hosts when the endpoint is this machine's, its
// client, the rendezvous algorithm over it), the workers' store of the rounds where this
// node is rank 0, the run directory and event log, and the event loop every round's worker
// group runs on. The round loop (elastic_agent.cc) and one round (round_run.cc) share it.

#include <boost/asio/io_context.hpp>
#include <functional>
#include <memory>
#include <string>

#include "launcher/agent/elastic_agent.h"
#include "launcher/group/file_timer_server.h"
#include "launcher/group/group_runner.h"
#include "launcher/group/supervision_files.h"
#include "launcher/group/worker_group.h"
#include "launcher/net/attempt_store.h"
#include "launcher/net/peer_link.h"
#include "launcher/net/rendezvous_host.h"
#include "launcher/output/event_log.h"
#include "launcher/output/run_directory.h"
#include "launcher/process/orphan_guard.h"
#include "launcher/process/process_runtime.h"
#include "pltrun/tcp_store.h"
#include "rendezvous/elastic/elastic_rendezvous.h"

namespace pltrun {

struct AgentSession {
  /// Hosts the rendezvous store if it is ours, connects to it (waiting up to read_timeout
  /// for its host to come up), and listens to signals. Throws Error with what to do.
  explicit AgentSession(const ResolvedJob& job);
  /// For the unit tests: a session over `store` (an InMemoryStore; nothing hosted, nothing
  /// connected), whose round watchers use `connectWatcher()` and whose workers run on
  /// `runtime` (fakes).
  AgentSession(const ResolvedJob& job, std::unique_ptr<Store> store,
               std::function<std::unique_ptr<Store>()> connectWatcher, ProcessRuntime runtime);

  /// A connection for a round's watcher, whose replies must come well within the time
  /// the other nodes take to notice this node missing (see fenceDeadline).
  std::unique_ptr<Store> connectWatcherStore() const;
  /// A worker group of `round`, whose workers' starts and ends go to the event log.
  GroupSettings groupSettings(int round);
  /// "; what to do" after the store at the endpoint failed the shared-secret handshake.
  std::string refusedStoreAdvice() const;
  /// Whether the rendezvous is kept in etcd (no agent hosts it).
  bool onEtcd() const { return settings.backend == RendezvousBackend::Etcd; }

  const ResolvedJob& job;
  const RendezvousSettings& settings;
  const std::string host;
  const std::string agentId;
  OrphanGuard guard;  // before any thread or worker exists
  std::unique_ptr<HostedStore> hosted;
  // The workers' store in the rounds where this node is rank 0: hosted by this agent (the
  // agent store), new every round and closed when the round ends, or only its port chosen
  // for rank 0's worker (--no-agent-store).
  std::unique_ptr<AttemptStore> workersStore;
  TcpStoreOptions storeOptions;  ///< c10d: the rendezvous store's address
  /// For messages: "the store at HOST:PORT", or "etcd at HOST:PORT,HOST:PORT".
  std::string storeName;
  std::unique_ptr<Store> store;
  std::unique_ptr<rdzv::ElasticRendezvous> rendezvous;
  RunDirectory directory;
  /// Heartbeat sockets, stack files and the Python hook of every round's workers.
  SupervisionFiles supervision{job.config.stallTimeout.has_value()};
  EventLog events;
  boost::asio::io_context context;
  /// torch's FileTimer watchdog, when TORCHELASTIC_ENABLE_FILE_TIMER=1.
  std::unique_ptr<FileTimerServer> fileTimer = serveFileTimer(job.config, context, supervision.timerFifoPath());
  GroupRunner runner{context};
  /// etcd: where this agent's ring neighbour links to it each round (peer_link.h).
  std::unique_ptr<PeerLinkListener> links;
  /// What the workers run on: real processes, or the unit tests' fakes.
  ProcessRuntime runtime = realProcessRuntime();

 private:
  void connect();
  TcpStoreOptions waitingForTheStore();
  void requireTcpStore(TcpStore& store) const;
  void connectToEtcd();
  rdzv::NodeDescriptor describeSelf() const;
  void openRendezvous(const rdzv::NodeDescriptor& self);
  void prepareWorkersStore(const rdzv::NodeDescriptor& self);

  /// Makes the round watchers' connections: etcd's (a client on this agent's lease) or the
  /// unit tests'; empty: a TcpStore to the rendezvous store.
  std::function<std::unique_ptr<Store>()> connectWatcher_;
};

}  // namespace pltrun

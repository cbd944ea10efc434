#pragma once
// One elastic agent's connection to the job's rendezvous, made once for the whole job: the
// store it hosts when the endpoint is this machine's, its client (or etcd's), the rendezvous
// rounds over it, and on etcd the listener its ring neighbour links to each round. The round
// loop (elastic_agent.cc) and each round (round_run.cc) talk to the other nodes through it.

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "launcher/group/group_runner.h"
#include "launcher/group/resolved_job.h"
#include "launcher/net/peer_link.h"
#include "launcher/net/rendezvous_host.h"
#include "pltrun/tcp_store.h"
#include "rendezvous/elastic/elastic_rendezvous.h"
#include "rendezvous/etcd/etcd_store.h"

namespace pltrun {

class RendezvousConnection {
 public:
  /// Hosts the rendezvous store if it is ours, connects to it (waiting up to read_timeout
  /// for its host to come up, and stopping on a signal `runner` catches), and opens the
  /// rendezvous as `host`, `agentId`. On etcd, its ring neighbour's links are accepted on
  /// `context`. Throws Error with what to do.
  RendezvousConnection(const ResolvedJob& job, const std::string& host, const std::string& agentId, GroupRunner& runner,
                       boost::asio::io_context& context);
  /// For the unit tests: the rendezvous over `store` (an InMemoryStore; nothing hosted,
  /// nothing connected), whose round watchers use `connectWatcher()`.
  RendezvousConnection(const ResolvedJob& job, const std::string& host, const std::string& agentId,
                       std::unique_ptr<Store> store, std::function<std::unique_ptr<Store>()> connectWatcher);

  rdzv::ElasticRendezvous& rendezvous() { return *rendezvous_; }
  Store& store() { return *store_; }
  const RendezvousSettings& settings() const { return settings_; }
  /// The name the other nodes know this one by (round ends name it).
  const std::string& host() const { return host_; }
  /// The address this node joined with: its workers' MASTER_ADDR when it is node rank 0.
  const std::string& joinedAddress() const { return joinedAddress_; }
  /// For messages: "the store at HOST:PORT", or "etcd at HOST:PORT,HOST:PORT".
  const std::string& storeName() const { return storeName_; }
  /// Whether the rendezvous is kept in etcd (no agent hosts it).
  bool onEtcd() const { return settings_.backend == RendezvousBackend::Etcd; }
  /// Whether this agent hosts the rendezvous store (it waits for the others to leave).
  bool hostsStore() const { return hosted_ != nullptr; }
  /// etcd: whether this agent's ring neighbour links to it each round (peer_link.h).
  bool acceptsPeerLinks() const { return links_ != nullptr; }
  /// etcd: whether this agent's lease is known to have expired (it was cut off from etcd
  /// longer than the lease's time to live): the others have gone on without this node.
  /// Reads what is known; safe from any thread.
  bool leaseKnownLost() const;
  /// etcd: the same, after asking etcd once now (between rounds, where the keep-alive may
  /// not have tried since etcd answers again). c10d: false.
  bool confirmLeaseLost();
  /// How long ago etcd last renewed this agent's lease (etcd only).
  std::chrono::milliseconds sinceLeaseRenewal() const;
  /// etcd, once the lease is lost: a new lease, a new agent id, the same link port, and a
  /// new rendezvous over them, so that the next join() comes in as a new node. Throws
  /// Error(Network) when etcd cannot grant the lease.
  void rejoinAsNewNode();
  /// A connection for a round's watcher, whose replies must come well within the time
  /// the other nodes take to notice this node missing (see fenceDeadline).
  std::unique_ptr<Store> connectWatcherStore() const;

 private:
  void connect(GroupRunner& runner);
  TcpStoreOptions waitingForTheStore(GroupRunner& runner);
  void requireTcpStore(TcpStore& store) const;
  std::string refusedStoreAdvice() const;
  void connectToEtcd();
  rdzv::NodeDescriptor describeSelf() const;
  void openRendezvous(const rdzv::NodeDescriptor& self);

  const ResolvedJob& job_;
  const RendezvousSettings& settings_;
  const std::string host_;
  std::string agentId_;  ///< new when it joins again as a new node (etcd)
  std::unique_ptr<HostedStore> hosted_;
  TcpStoreOptions storeOptions_;  ///< c10d: the rendezvous store's address
  std::string storeName_;
  std::unique_ptr<Store> store_;
  etcd::EtcdStore* etcd_ = nullptr;  ///< store_, on etcd: its lease
  std::unique_ptr<rdzv::ElasticRendezvous> rendezvous_;
  std::unique_ptr<PeerLinkListener> links_;
  std::string joinedAddress_;
  /// Makes the round watchers' connections: etcd's (a client on this agent's lease) or the
  /// unit tests'; empty: a TcpStore to the rendezvous store.
  std::function<std::unique_ptr<Store>()> connectWatcher_;
};

}  // namespace pltrun

#pragma once
// The workers' TCPStore of each attempt (single node) or round (elastic, on node rank 0's
// agent): hosted by the launcher (TORCHELASTIC_USE_AGENT_STORE=True), or by rank 0's
// worker (--no-agent-store), for which only its port is chosen here.
//
// torch 1.13 workers put their keys under /worker/attempt_N, but torch 2.x workers use
// no prefix at all ("we create a new TCPStore for every retry"): a store shared by all
// attempts hands attempt N's workers the gloo/NCCL addresses, unique ids and barrier
// counters of attempt N-1, and they connect to dead peers or hang. So each attempt gets
// its own listener with an empty table, and the previous attempt's listener and every
// connection to it are closed: a straggler of an old attempt (a worker not dead yet, a
// process it left behind) can neither read nor write the new attempt's keys. Unless the
// port is fixed (--master-port), each attempt's port, whoever listens on it, is one no
// recent attempt of this run used (recent_ports.h: the last 16, and any within 5 minutes
// while the port range has room), so reconnecting to an old MASTER_PORT reaches nothing.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "launcher/net/recent_ports.h"
#include "launcher/net/rendezvous_host.h"

namespace pltrun {

class AttemptStore {
 public:
  /// The agent store's limits. Any local user can reach it (torch clients cannot
  /// authenticate), so it is bounded for what a real job keeps there (per rank: addresses,
  /// unique ids, barrier counters, some pickled objects; kilobytes to megabytes), not the
  /// standalone store's 2 GiB and 4 Mi keys: at most 256 MiB of keys, values, queue items and
  /// parked requests as charged (store_costs.h), and as much again in connection buffers.
  static constexpr std::uint64_t kMaxStoreBytes = 256ull * 1024 * 1024;
  static constexpr std::uint64_t kMaxStoreKeys = 1024 * 1024;  ///< keys and queue items

  /// Who listens: this launcher (the agent store, TORCHELASTIC_USE_AGENT_STORE=True), or
  /// rank 0's worker (--no-agent-store, torch's own store), for which only the port of each
  /// attempt is chosen here.
  enum class Host { Launcher, RankZeroWorker };

  /// Listens on `bindAddress` (an address literal or a host name; for RankZeroWorker, the
  /// address whose free ports are picked); `fixedPort` keeps one port for every attempt
  /// (a launcher-hosted table is new all the same).
  AttemptStore(Host host, std::string bindAddress, std::optional<int> fixedPort = std::nullopt);
  ~AttemptStore();
  AttemptStore(const AttemptStore&) = delete;
  AttemptStore& operator=(const AttemptStore&) = delete;

  /// Opens the next attempt's store and closes the previous one (Launcher), or picks the
  /// port rank 0's worker will listen on (RankZeroWorker); returns the port. Throws
  /// Error(Network) when it cannot listen or find a port.
  int openNext();
  /// Closes the current attempt's store and every connection to it (nothing when none).
  void close();
  /// Whether this launcher hosts the workers' store (TORCHELASTIC_USE_AGENT_STORE).
  bool hostedHere() const { return host_ == Host::Launcher; }
  /// The current store's port; 0 when none is open here.
  int port() const { return current_ ? current_->port() : 0; }

 private:
  std::unique_ptr<HostedStore> listen(int port);
  int listenOnUnusedPort();
  int pickUnusedPort();
  /// Whether `port` may be this attempt's: not given recently. If so, it is remembered.
  bool takeIfUnused(int port);

  Host host_;
  std::string bindAddress_;
  std::optional<int> fixedPort_;
  std::unique_ptr<HostedStore> current_;
  RecentPorts recentPorts_;  ///< the ports recent attempts of this run were given
};

}  // namespace pltrun

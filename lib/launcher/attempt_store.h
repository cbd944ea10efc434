#pragma once
// The workers' TCPStore when the launcher hosts it (TORCHELASTIC_USE_AGENT_STORE=True):
// a new store for every attempt (single node) or round (elastic, on node rank 0's agent).
//
// torch 1.13 workers put their keys under /worker/attempt_N, but torch 2.x workers use
// no prefix at all ("we create a new TCPStore for every retry"): a store shared by all
// attempts hands attempt N's workers the gloo/NCCL addresses, unique ids and barrier
// counters of attempt N-1, and they connect to dead peers or hang. So each attempt gets
// its own listener with an empty table, and the previous attempt's listener and every
// connection to it are closed: a straggler of an old attempt (a worker not dead yet, a
// process it left behind) can neither read nor write the new attempt's keys. Unless the
// port is fixed (--master-port), the new listener's port is one no earlier attempt of this
// run used, so reconnecting to an old MASTER_PORT reaches nothing.

#include <memory>
#include <optional>
#include <set>
#include <string>

#include "launcher/rendezvous_host.h"

namespace pltrun {

class AttemptStore {
 public:
  /// Listens on `bindAddress` (an address literal or a host name); `fixedPort` keeps one
  /// port for every attempt (the table is new all the same).
  explicit AttemptStore(std::string bindAddress, std::optional<int> fixedPort = std::nullopt);
  ~AttemptStore();
  AttemptStore(const AttemptStore&) = delete;
  AttemptStore& operator=(const AttemptStore&) = delete;

  /// Opens the next attempt's store and closes the previous one; returns its port.
  /// Throws Error(Network) when it cannot listen.
  int openNext();
  /// Closes the current attempt's store and every connection to it (nothing when none).
  void close();
  /// The current store's port; 0 when none is open.
  int port() const { return current_ ? current_->port() : 0; }

 private:
  std::unique_ptr<HostedStore> listen(int port);

  std::string bindAddress_;
  std::optional<int> fixedPort_;
  std::unique_ptr<HostedStore> current_;
  std::set<int> usedPorts_;
};

/// A free port on `address` (see pickFreePort) that is not in `avoid`; throws Error(Network).
int pickFreePortExcept(const std::string& address, const std::set<int>& avoid);

}  // namespace pltrun

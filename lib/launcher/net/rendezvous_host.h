#pragma once
// Where the elastic rendezvous store lives. As with torchrun, the agent whose machine owns
// the --rdzv-endpoint address hosts it (is_host in --rdzv-conf overrides that), and every
// other agent connects to it; when a second agent on the same machine finds the port taken,
// it connects too. An endpoint nobody hosts may be a standalone pltrun-store.
//
// The hosted store runs on a thread of its own: the agent's main thread blocks on
// rendezvous calls, and the store must answer meanwhile, its own agent included.

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "launcher/plan/launch_config.h"
#include "rendezvous/store/server/store_server.h"

namespace pltrun {

class HostedStore {
 public:
  /// Binds now (throws rdzv::AddressInUse or Error(Network)); serves on its own thread.
  explicit HostedStore(rdzv::StoreServerOptions options);
  ~HostedStore();
  HostedStore(const HostedStore&) = delete;
  HostedStore& operator=(const HostedStore&) = delete;

  int port() const { return port_; }

 private:
  boost::asio::io_context context_;
  std::unique_ptr<rdzv::StoreServer> server_;
  int port_ = 0;
  std::thread thread_;
};

/// True for a loopback address literal: 127.0.0.0/8 or ::1.
bool isLoopbackAddress(const std::string& address);

/// The address of network interface `name` (IPv4 first, else IPv6); empty when it has none.
std::string interfaceAddress(const std::string& name);

/// True when `host` names this machine: a loopback or local interface address, "localhost",
/// or this machine's host name (or a name that resolves to one of its addresses).
bool isLocalHost(const std::string& host);

/// The address a listening socket should use for an endpoint host: the literal address
/// itself, 127.0.0.1 for "localhost", and every interface for other names (as torch does).
std::string listenAddressFor(const std::string& host);

/// Where this node listens for what its peers reach at `addr` (the address it joined with):
/// that address when it is this machine's, else every interface (a host name, or an address
/// behind NAT that this machine does not own).
std::string nodeListenAddress(const std::string& addr);

/// The local address this machine uses to reach host:port (no packet is sent), e.g. for
/// MASTER_ADDR when rank 0's node hosts the workers' store. Empty when there is no route.
std::string localAddressTowards(const std::string& host, int port);

/// Hosts the rendezvous store when this agent should (see above); empty otherwise. With a
/// secret, the store admits only clients that prove it and are in run `runId`.
std::unique_ptr<HostedStore> hostRendezvousStoreIfOurs(const RendezvousSettings& settings, const std::string& secret,
                                                       const std::string& runId);

}  // namespace pltrun

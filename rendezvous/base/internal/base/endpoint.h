#pragma once
// Where something listens: a host and a port, as the flags name the rendezvous endpoint,
// the etcd members and the peers, and as the etcd client connects to them. One type for
// all of them, so that one member list passes from the flags to the client unconverted.

#include <string>

#include "base/host_port_text.h"

namespace pltrun {

struct Endpoint {
  std::string host;  ///< a name or an address; IPv6 without brackets
  int port = 0;
  bool operator==(const Endpoint& other) const { return host == other.host && port == other.port; }
};

/// "host:port", with brackets around an IPv6 address: what parseEndpoint reads back.
inline std::string endpointText(const Endpoint& endpoint) { return hostPortText(endpoint.host, endpoint.port); }

}  // namespace pltrun

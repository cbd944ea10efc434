#pragma once
// How to reach an etcd cluster: its members, the per-request timeout, TLS and
// authentication. Shared by the client, its connections and the TLS setup.

#include <chrono>
#include <string>
#include <vector>

#include "base/endpoint.h"

namespace pltrun::etcd {

struct EtcdClientOptions {
  std::vector<Endpoint> endpoints;
  /// One request, connecting included, on one endpoint.
  std::chrono::milliseconds timeout{5000};
  /// etcd's authentication: a token is asked for with these, and asked again when it lapses.
  std::string user;
  std::string password;
  /// TLS to every member (protocol=https), which must present a certificate signed by
  /// `caFile` (empty: the system's CAs) naming the host it was reached at; `certFile` and
  /// `keyFile` (PEM) are the client's own, for members run with --client-cert-auth.
  bool https = false;
  std::string caFile, certFile, keyFile;
};

}  // namespace pltrun::etcd

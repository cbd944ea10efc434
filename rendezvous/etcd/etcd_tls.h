#pragma once
// TLS for the etcd connections: the OpenSSL context a client's options ask for (made once
// per client, so a bad file is reported before any member is tried), and what a failed
// handshake most likely means, in words the user can act on.

#include <boost/asio/ssl/context.hpp>
#include <string>

#include "rendezvous/etcd/etcd_options.h"

namespace pltrun::etcd {

/// The likely cause of a handshake a member hung up on, or answered with plain HTTP.
inline constexpr const char* kServesNoHttps = "it does not serve https: use protocol=http";

/// Verifies members against options.caFile (the system's CAs when empty); presents
/// options.certFile when set. Throws Error(InvalidArgument) naming a file that cannot be used.
boost::asio::ssl::context tlsContext(const EtcdClientOptions& options);

/// The likely cause of a TLS failure OpenSSL gave `reason` for; empty when unknown. With
/// TLS 1.3 a member refuses a client certificate after the handshake, on the first read.
std::string tlsFailureCause(const std::string& reason, const EtcdClientOptions& options);

}  // namespace pltrun::etcd

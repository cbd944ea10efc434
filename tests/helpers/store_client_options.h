#pragma once
// Options for pltrun's own client to a store on 127.0.0.1: how the tests reach a store as
// an agent, a tool or an attacker would.

#include <chrono>
#include <string>

#include "pltrun/tcp_store.h"

namespace pltrun::test {

/// 127.0.0.1:`port`, 5 s to connect and 5 s a reply; with `secret` (and the run id the
/// handshake names) when given.
inline TcpStoreOptions loopbackStoreOptions(int port, const std::string& secret = "", const std::string& runId = "") {
  TcpStoreOptions options;
  options.host = "127.0.0.1";
  options.port = port;
  options.connectTimeout = std::chrono::seconds(5);
  options.timeout = std::chrono::seconds(5);
  options.secret = secret;
  options.authContext = runId;
  return options;
}

}  // namespace pltrun::test

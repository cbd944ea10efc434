#pragma once
// What a store server is told: where to listen, its limits (requests, table, connections)
// and timeouts, and the shared secret of its handshake. Read by the server and by each
// connection's state machine (store_connection.h), which must not see Asio.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "rendezvous/store/store_protocol.h"

namespace pltrun::rdzv {

struct StoreServerOptions {
  std::string host = "127.0.0.1";
  int port = 0;  ///< 0: a free port, read back with port()
  ProtocolLimits limits;
  /// The whole table as charged (store_costs.h: keys and values, queue items, parked
  /// requests, close notices), and how many keys and queue items. The connections' buffers
  /// (requests arriving, replies unwritten) may hold as much again, all together.
  std::uint64_t maxStoreBytes = 2ull * 1024 * 1024 * 1024;
  std::uint64_t maxStoreKeys = 4 * 1024 * 1024;
  size_t maxConnections = 100000;
  /// Descriptors the server may use for connections; 0: the open-file limit less 64 (a
  /// standalone store). A server inside an agent gets a share, so that a flood of idle
  /// connections cannot take the descriptors the agent needs to start workers. The
  /// connection limit in force is the smaller of the two.
  size_t descriptorBudget = 0;
  /// A request that has started arriving must be complete within this (slow clients).
  std::chrono::milliseconds requestTimeout{30000};
  /// Close connections that send nothing for this long (0: never; PyTorch workers keep
  /// their store connection idle for a whole training run).
  std::chrono::milliseconds idleTimeout{0};
  /// Shared secret: when set, every connection must pass pltrun's handshake
  /// (store_auth.h) before any other request; torch clients cannot, and are refused.
  std::string secret;
  /// With a secret: when set, only clients that name this run in AUTH_HELLO authenticate
  /// (an agent's store serves its own job); empty: any run (a shared pltrun-store).
  std::string context;
  /// With a secret: a connection that has not authenticated within this is closed.
  std::chrono::milliseconds authTimeout{5000};
};

}  // namespace pltrun::rdzv

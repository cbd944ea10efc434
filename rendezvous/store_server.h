#pragma once
// The store's TCP server on Boost.Asio: one event loop, thousands of connections, blocking
// WAIT/GET served by parking the request (never polling). Embeddable (the launcher hosts
// it on its own event loop) and run standalone by apps/pltrun-store.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

#include "pltrun/error.h"
#include "rendezvous/store_protocol.h"
#include "rendezvous/store_table.h"

namespace pltrun::rdzv {

struct StoreServerOptions {
  std::string host = "127.0.0.1";
  int port = 0;  ///< 0: a free port, read back with port()
  ProtocolLimits limits;
  /// The whole table: keys and values together, and how many keys.
  std::uint64_t maxStoreBytes = 2ull * 1024 * 1024 * 1024;
  std::uint64_t maxStoreKeys = 4 * 1024 * 1024;
  size_t maxConnections = 100000;
  /// A request that has started arriving must be complete within this (slow clients).
  std::chrono::milliseconds requestTimeout{30000};
  /// Close connections that send nothing for this long (0: never; PyTorch workers keep
  /// their store connection idle for a whole training run).
  std::chrono::milliseconds idleTimeout{0};
  /// Shared secret: when set, every connection must pass pltrun's challenge-response
  /// before any other request; torch clients cannot, and are refused.
  std::string secret;
};

class StoreSession;

/// Thrown by StoreServer's constructor when another process listens on the address already
/// (an agent on the same machine that hosts the rendezvous store).
struct AddressInUse : Error {
  using Error::Error;
};

class StoreServer {
 public:
  /// Binds and listens; throws Error(Network) naming the address when it cannot.
  StoreServer(boost::asio::io_context& context, StoreServerOptions options);
  ~StoreServer();

  /// Starts accepting connections (on the context's thread).
  void start();
  /// Stops accepting and closes every connection.
  void stop();

  int port() const { return port_; }
  const std::string& host() const { return options_.host; }
  size_t connectionCount() const { return sessions_.size(); }
  StoreTable& table() { return table_; }
  const StoreServerOptions& options() const { return options_; }

 private:
  friend class StoreSession;
  void acceptNext();
  void sessionClosed(StoreTable::OwnerId id);

  boost::asio::io_context& context_;
  StoreServerOptions options_;
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::steady_timer retryTimer_;
  int port_ = 0;
  StoreTable table_;
  std::unordered_map<StoreTable::OwnerId, std::shared_ptr<StoreSession>> sessions_;
  StoreTable::OwnerId nextSessionId_ = 1;
  bool stopped_ = false;
};

/// Raises this process's open-file limit to its hard limit (a store holds one descriptor
/// per client); returns the limit now in force.
std::uint64_t raiseOpenFileLimit();

}  // namespace pltrun::rdzv

#pragma once
// The store's TCP server on Boost.Asio: one event loop, thousands of connections, blocking
// WAIT/GET served by parking the request (never polling). Embeddable (the launcher hosts
// it on its own event loop) and run standalone by apps/pltrun-store.

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>

#include "pltrun/error.h"
#include "rendezvous/store/server/buffer_budget.h"
#include "rendezvous/store/server/store_server_options.h"
#include "rendezvous/store/server/warning_rate.h"
#include "rendezvous/store/store_protocol.h"
#include "rendezvous/store/store_table.h"

namespace pltrun::rdzv {

class StoreSession;

/// What a session needs from the server that accepted it, and nothing more: the options,
/// the table, the budget of all connections' buffers, the one read buffer they share, and
/// where to report that it authenticated or closed.
class SessionHost {
 public:
  /// Bytes read from one socket at a time: the event loop's one thread copies them into that
  /// connection's input at once, so one buffer serves every connection.
  static constexpr size_t kReadBufferSize = 64 * 1024;

  virtual const StoreServerOptions& options() const = 0;
  virtual StoreTable& table() = 0;
  virtual BufferBudget& buffers() = 0;
  virtual char* readBuffer() = 0;
  virtual void sessionAuthenticated(StoreTable::OwnerId id) = 0;
  virtual void sessionClosed(StoreTable::OwnerId id) = 0;

 protected:
  ~SessionHost() = default;
};

/// Thrown by StoreServer's constructor when another process listens on the address already
/// (an agent on the same machine that hosts the rendezvous store).
struct AddressInUse : Error {
  using Error::Error;
};

class StoreServer final : public SessionHost {
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
  /// At most this many connections wait to authenticate at once: half the connection
  /// limit in force, so authenticated clients always keep the other half. When a new connection
  /// would pass it, the one that has waited longest is closed (it had the most time).
  size_t maxPending() const { return std::max<size_t>(1, maxConnections_ / 2); }
  /// --max-connections, or fewer where the descriptors allow fewer.
  size_t maxConnections() const { return maxConnections_; }
  StoreTable& table() override { return table_; }
  BufferBudget& buffers() override { return buffers_; }
  char* readBuffer() override { return readBuffer_.get(); }
  const StoreServerOptions& options() const override { return options_; }

 private:
  void acceptNext();
  void admit(boost::asio::ip::tcp::socket socket);
  /// Out of descriptors: the spare one makes room to accept the waiting connection and
  /// close it at once, so its client is told instead of left hanging. False when the
  /// spare could not be had back (accept again only after a pause).
  bool shedConnectionWithoutDescriptors();
  void evictOldestPending(const std::string& reason);
  void sessionClosed(StoreTable::OwnerId id) override;
  void sessionAuthenticated(StoreTable::OwnerId id) override { pending_.erase(id); }

  StoreServerOptions options_;
  size_t maxConnections_ = 0;
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::steady_timer retryTimer_;
  int port_ = 0;
  StoreTable table_;
  BufferBudget buffers_;
  std::unique_ptr<char[]> readBuffer_{new char[kReadBufferSize]};
  std::unordered_map<StoreTable::OwnerId, std::shared_ptr<StoreSession>> sessions_;
  std::set<StoreTable::OwnerId> pending_;  ///< not authenticated yet; ids grow, so begin() waited longest
  int spareDescriptor_ = -1;
  WarningRate shedWarnings_{std::chrono::seconds(10)};  ///< connections closed for want of descriptors
  StoreTable::OwnerId nextSessionId_ = 1;
  bool stopped_ = false;
};

/// Raises this process's open-file limit to its hard limit (a store holds one descriptor
/// per client); returns the limit now in force.
std::uint64_t raiseOpenFileLimit();

/// `parts`/`whole` of this process's open-file limit, for StoreServerOptions::descriptorBudget
/// of a store inside an agent: its rendezvous store gets half, its workers' store a quarter,
/// and the last quarter stays for the agent's own work (workers' pipes, pidfds, heartbeat
/// sockets, its store clients). Call after raiseOpenFileLimit().
size_t openFileLimitShare(size_t parts, size_t whole);

}  // namespace pltrun::rdzv

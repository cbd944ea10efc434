#pragma once
// The TCP client of the store. It speaks PyTorch's TCPStore protocol, so it works with
// pltrun's store (pltrun-store, or the one a launcher hosts) and with PyTorch's own
// TCPStore server, in torch 2.x's dialect or torch 1.13's.

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "pltrun/store.h"

namespace pltrun {

enum class StoreDialect {
  Torch2,    ///< torch 2.x servers, and pltrun's
  Torch113,  ///< torch 1.13 servers (Debian bookworm's python3-torch), and pltrun's
};

struct TcpStoreOptions {
  std::string host = "127.0.0.1";
  int port = 0;
  StoreDialect dialect = StoreDialect::Torch2;
  /// How long to keep trying to connect (exponential back-off with jitter in between).
  std::chrono::milliseconds connectTimeout{30000};
  /// Called after each failed attempt with the time spent so far (at most a second apart):
  /// it may report progress, or throw to give up (pltrun ends the wait on a stop signal).
  std::function<void(std::chrono::milliseconds waited)> betweenAttempts;
  /// Default timeout of get/wait, and the limit on any single reply.
  std::chrono::milliseconds timeout{300000};
  /// pltrun's shared-secret authentication; empty for none. With a secret both sides
  /// prove it: a store that cannot is refused (Error(PermissionDenied)) before any request.
  std::string secret;
  /// With a secret: the run this client is in. A store that serves one run (an agent's)
  /// refuses clients of another; a shared pltrun-store serves any.
  std::string authContext;
  /// Prepended to every key on the wire. torch's TCPStore client prepends "/", so with
  /// the default a key set here is the same key PyTorch programs read, and vice versa.
  std::string keyPrefix = "/";
};

class TcpStore : public Store {
 public:
  /// Connects, retrying until connectTimeout. Throws Error(Network) naming the endpoint
  /// and the time spent, or Error(PermissionDenied) when the secret is refused or the store
  /// cannot prove it.
  explicit TcpStore(TcpStoreOptions options);
  ~TcpStore() override;

  void set(const std::string& key, const std::string& value) override;
  std::string get(const std::string& key, Duration timeout) override;
  std::int64_t add(const std::string& key, std::int64_t delta) override;
  std::string compareSet(const std::string& key, const std::string& expected, const std::string& desired) override;
  bool check(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, Duration timeout) override;
  bool deleteKey(const std::string& key) override;
  std::int64_t numKeys() override;
  // The composite operations are the server's own requests (APPEND, MULTI_GET, MULTI_SET:
  // one each, as torch's client sends them). torch 1.13 servers have none of them: there
  // append and multiSet are Store's defaults, and multiGet one WAIT and a GET of each key.
  void append(const std::string& key, const std::string& value) override;
  std::vector<std::string> multiGet(const std::vector<std::string>& keys, Duration timeout) override;
  void multiSet(const std::vector<std::string>& keys, const std::vector<std::string>& values) override;
  /// pltrun's store only (torch's servers close the connection on it). The key lives as
  /// long as this client's connection.
  void setEphemeral(const std::string& key, const std::string& value) override;
  /// pltrun's store only (torch's servers close the connection on it). The notice belongs
  /// to this client's current connection: when that connection is lost, the server fires
  /// it then, and the call that reconnects does not register it again on the new
  /// connection (call setCloseNotice again for that). Clearing it (an empty key) while
  /// disconnected does nothing, since no connection holds a notice then.
  void setCloseNotice(const std::string& key, const std::string& value) override;

  /// A round trip to the server (PING); throws like every other call if it fails.
  void ping();
  /// "host:port".
  std::string endpoint() const;

  using Store::get;
  using Store::wait;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pltrun

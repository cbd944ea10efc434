#pragma once
// One keep-alive HTTP/1.1 connection to one etcd member, over TCP or TLS (Boost.Beast):
// a request and its whole answer, or a streamed answer (/v3/watch) read a line at a time.
// Every step runs on a private io_context for at most its timeout, so a member that stops
// answering (SIGSTOP, a dead link) costs one timeout, never a hang.

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "rendezvous/etcd/etcd_options.h"

namespace boost::asio::ssl {
class context;
}

namespace pltrun::etcd {

/// What went wrong on one endpoint, worth trying the next for.
struct EndpointFailed {
  std::string reason;
};

/// How a streamed answer is waited for: `between` (when set) runs every `slice`, on the
/// waiting thread, and may throw to abandon the stream.
struct StreamPacing {
  std::chrono::milliseconds slice{0};
  std::function<void()> between;
};

class EtcdConnection {
 public:
  /// Connects within `timeout`, and with `tls` (null: plain http) shakes hands within it
  /// too, checking that the member's certificate names endpoint.host. Throws EndpointFailed.
  /// `options` must outlive the connection.
  EtcdConnection(const Endpoint& endpoint, const EtcdClientOptions& options, boost::asio::ssl::context* tls,
                 std::chrono::milliseconds timeout);
  ~EtcdConnection();
  EtcdConnection(const EtcdConnection&) = delete;
  EtcdConnection& operator=(const EtcdConnection&) = delete;

  /// POSTs `body` and returns the answer's body. Throws EndpointFailed when the member does
  /// not answer in time or the connection breaks, Error(Protocol) for a server that is not
  /// etcd v3.
  std::string post(const std::string& path, const std::string& body, std::chrono::milliseconds timeout);

  /// POSTs to a streaming endpoint and hands each line of the answer to `onLine` until it
  /// returns true (then true), or `timeout` passes (then false). The connection cannot
  /// serve anything else afterwards.
  bool postStreaming(const std::string& path, const std::string& body, std::chrono::milliseconds timeout,
                     const std::function<bool(std::string_view)>& onLine, const StreamPacing& pacing = {});

  /// etcd's auth token, sent as Authorization from now on (empty: none).
  void setToken(std::string token);
  /// "host:port" of the member.
  const std::string& host() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pltrun::etcd

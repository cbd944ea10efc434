#pragma once
// `--metrics ADDR:PORT`: Prometheus's scrape endpoint. HTTP/1.1 over Boost.Beast, on a
// thread and an io_context of its own (an elastic agent's event loop stops while it
// rendezvouses; a scrape must not). It knows nothing of the metrics: `body` (called on its
// thread, per request; MetricsRecorder::scrape) makes the text. Read-only: GET (and HEAD)
// /metrics answer `body`'s text as "text/plain; version=0.0.4; charset=utf-8" (a query
// string is ignored), and the connection may be kept alive; any other path is 404, any other
// method 405 (with Allow), a malformed request 400, and the connection closes after them
// (metrics_request.h decides, without a socket). Bounded: at most `maxConnections` at once
// (more are accepted and closed at once), a request's head at most `maxRequestBytes` (431),
// no body (413), and each connection at most `idleTimeout` without a whole request.

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "base/endpoint.h"

namespace pltrun {

struct MetricsServerLimits {
  int maxConnections = 32;
  size_t maxRequestBytes = 8192;
  std::chrono::milliseconds idleTimeout{10000};
};

class MetricsServer {
 public:
  /// Binds `endpoint` (port 0: the kernel picks one) and starts serving. Throws
  /// Error(InvalidArgument) with one line naming the address when it cannot bind.
  MetricsServer(const Endpoint& endpoint, std::function<std::string()> body, MetricsServerLimits limits = {});
  /// Stops the thread; open connections are closed.
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  /// The address and port it listens on (the kernel's port when 0 was asked).
  Endpoint listening() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pltrun

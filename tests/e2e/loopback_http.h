#pragma once
// A plain HTTP/1.0 GET on loopback, for tests that read an HTTP endpoint (Prometheus's query
// API, pltrun's /metrics): one connection per request, the whole answer read until the server
// closes it (HTTP/1.0: no chunked body, no keep-alive), every step bounded by a deadline.

#include <chrono>
#include <string>

namespace pltrun::test {

struct HttpAnswer {
  int status = 0;    ///< the status line's code
  std::string head;  ///< the status line and headers
  std::string body;
};

/// GET `target` ("/path?query") from 127.0.0.1:`port`. Throws std::runtime_error naming the
/// port when it cannot connect, the answer is not HTTP or `timeout` passes first.
HttpAnswer httpGet(int port, const std::string& target, std::chrono::milliseconds timeout = std::chrono::seconds(5));

/// `text` percent-encoded for a URL's query (every byte but A-Z a-z 0-9 - _ . ~).
std::string urlEncoded(const std::string& text);

}  // namespace pltrun::test

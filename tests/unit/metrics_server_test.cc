// The metrics endpoint over real loopback sockets: what it answers, and that it stays up and
// bounded under what a scraper, a port scanner or a flood sends it (issue 47).

#include "launcher/metrics/metrics_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "helpers/loopback_listener.h"
#include "launcher/metrics/metrics_request.h"
#include "pltrun/error.h"

using pltrun::MetricsServer;
using pltrun::MetricsServerLimits;
using namespace std::chrono_literals;

namespace {

const std::string kBody = "# HELP pltrun_test a test\n# TYPE pltrun_test gauge\npltrun_test 1\n";

// A client connection to the server, with a receive timeout so that a test never hangs.
class Client {
 public:
  explicit Client(int port, bool ipv6 = false) {
    fd_ = socket(ipv6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd_ >= 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sockaddr_in6 address6{};
    address6.sin6_family = AF_INET6;
    address6.sin6_port = htons(static_cast<uint16_t>(port));
    address6.sin6_addr = in6addr_loopback;
    const int connected = ipv6 ? connect(fd_, reinterpret_cast<sockaddr*>(&address6), sizeof address6)
                               : connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address);
    REQUIRE(connected == 0);
  }
  ~Client() { close(fd_); }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  void send(const std::string& bytes) const {
    size_t sent = 0;
    while (sent < bytes.size()) {
      const ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      REQUIRE(n > 0);
      sent += static_cast<size_t>(n);
    }
  }

  // Reads one response: its head, then as many body bytes as Content-Length says (none after
  // a HEAD). Empty when the server closed the connection before answering.
  std::string response(bool afterHead = false) {
    while (pending_.find("\r\n\r\n") == std::string::npos) {
      if (!readMore()) return std::exchange(pending_, "");
    }
    const size_t headEnd = pending_.find("\r\n\r\n") + 4;
    size_t length = 0;
    const auto field = pending_.find("Content-Length: ");
    if (field != std::string::npos && field < headEnd) length = std::stoul(pending_.substr(field + 16));
    if (afterHead) length = 0;
    while (pending_.size() < headEnd + length) {
      if (!readMore()) break;
    }
    std::string result = pending_.substr(0, headEnd + length);
    pending_.erase(0, result.size());
    return result;
  }

  // Whether the server closed the connection (end of stream or reset) within `wait`.
  bool closedWithin(std::chrono::milliseconds wait) {
    pollfd one{fd_, POLLIN, 0};
    if (poll(&one, 1, static_cast<int>(wait.count())) != 1) return false;
    char byte = 0;
    return recv(fd_, &byte, 1, MSG_DONTWAIT) <= 0;
  }

 private:
  bool readMore() {
    pollfd one{fd_, POLLIN, 0};
    if (poll(&one, 1, 5000) != 1) return false;
    char chunk[4096];
    const ssize_t n = recv(fd_, chunk, sizeof chunk, 0);
    if (n <= 0) return false;
    pending_.append(chunk, static_cast<size_t>(n));
    return true;
  }

  int fd_ = -1;
  std::string pending_;
};

std::string get(const std::string& target, const std::string& method = "GET") {
  return method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
}

std::string statusLine(const std::string& response) { return response.substr(0, response.find("\r\n")); }

struct Served {
  explicit Served(MetricsServerLimits limits = {})
      : server(
            {"127.0.0.1", 0}, [] { return kBody; }, limits) {}
  int port() const { return server.listening().port; }
  MetricsServer server;
};

// A scrape on a new connection, as Prometheus makes one.
std::string scrape(int port) {
  Client client(port);
  client.send(get("/metrics"));
  return client.response();
}

// A scrape tried again until it is answered or `wait` has passed: connections the server has
// not yet seen closed may still hold every place.
std::string scrapeWithin(int port, std::chrono::milliseconds wait) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  std::string response = scrape(port);
  while (response.empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
    response = scrape(port);
  }
  return response;
}

}  // namespace

TEST_CASE("metrics server: GET /metrics answers the body as Prometheus's text format", "[metrics_server]") {
  Served served;
  CHECK(served.server.listening().host == "127.0.0.1");
  CHECK(served.port() > 0);
  const std::string response = scrape(served.port());
  CHECK(statusLine(response) == "HTTP/1.1 200 OK");
  CHECK(response.find("Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n") != std::string::npos);
  CHECK(response.find("Content-Length: " + std::to_string(kBody.size()) + "\r\n") != std::string::npos);
  CHECK(response.substr(response.find("\r\n\r\n") + 4) == kBody);
}

TEST_CASE("metrics server: IPv6 loopback, [::1]:0", "[metrics_server]") {
  const int probe = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in6 loopback{};
  loopback.sin6_family = AF_INET6;
  loopback.sin6_addr = in6addr_loopback;
  const bool hasIpv6 = probe >= 0 && bind(probe, reinterpret_cast<sockaddr*>(&loopback), sizeof loopback) == 0;
  if (probe >= 0) close(probe);
  if (!hasIpv6) {
    WARN("skipped: this machine has no IPv6 loopback");
    return;
  }
  MetricsServer server({"::1", 0}, [] { return kBody; });
  CHECK(server.listening().host == "::1");
  Client client(server.listening().port, true);
  client.send(get("/metrics"));
  CHECK(statusLine(client.response()) == "HTTP/1.1 200 OK");
}

TEST_CASE("metrics server: HEAD /metrics answers the length without the body", "[metrics_server]") {
  Served served;
  Client client(served.port());
  client.send(get("/metrics", "HEAD"));
  const std::string response = client.response(true);
  CHECK(statusLine(response) == "HTTP/1.1 200 OK");
  CHECK(response.find("Content-Length: " + std::to_string(kBody.size()) + "\r\n") != std::string::npos);
  CHECK(response.substr(response.find("\r\n\r\n") + 4).empty());
  client.send(get("/metrics"));  // still open (keep-alive), and nothing of a body came between
  CHECK(statusLine(client.response()) == "HTTP/1.1 200 OK");
}

TEST_CASE("metrics server: another path is 404, another method 405 with Allow", "[metrics_server]") {
  Served served;
  {
    Client client(served.port());
    client.send(get("/"));
    CHECK(statusLine(client.response()) == "HTTP/1.1 404 Not Found");
    CHECK(client.closedWithin(2s));
  }
  {
    Client client(served.port());
    client.send(get("/metrics/../etc/passwd"));
    CHECK(statusLine(client.response()) == "HTTP/1.1 404 Not Found");
  }
  {
    Client client(served.port());
    client.send(get("/metrics?name[]=up"));  // Prometheus's params: a query string is served
    CHECK(statusLine(client.response()) == "HTTP/1.1 200 OK");
  }
  for (const std::string method : {"POST", "PUT", "DELETE", "OPTIONS", "BREW"}) {
    Client client(served.port());
    client.send(get("/metrics", method));
    const std::string response = client.response();
    CHECK(statusLine(response) == "HTTP/1.1 405 Method Not Allowed");
    CHECK(response.find("Allow: GET, HEAD\r\n") != std::string::npos);
  }
}

TEST_CASE("metrics server: garbage is 400, a huge head 431, a body 413", "[metrics_server]") {
  Served served(MetricsServerLimits{32, 1024, 10s});
  {
    Client client(served.port());
    // A TLS ClientHello's first bytes (NULs included), then text: what a scanner sends first.
    static const char kHello[] = "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 not http\r\n\r\n";
    client.send(std::string(kHello, sizeof kHello - 1));
    CHECK(statusLine(client.response()) == "HTTP/1.1 400 Bad Request");
    CHECK(client.closedWithin(2s));
  }
  {
    Client client(served.port());
    client.send("GET /metrics HTTP/1.1\r\nX-Filler: " + std::string(4000, 'a') + "\r\n\r\n");
    CHECK(statusLine(client.response()) == "HTTP/1.1 431 Request Header Fields Too Large");
    CHECK(client.closedWithin(2s));
  }
  {
    Client client(served.port());
    client.send("GET /metrics HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello");
    CHECK(statusLine(client.response()) == "HTTP/1.1 413 Payload Too Large");
  }
  CHECK(statusLine(scrape(served.port())) == "HTTP/1.1 200 OK");
}

TEST_CASE("metrics server: a body that throws is 500, and the server goes on", "[metrics_server]") {
  std::atomic<bool> fail{true};
  MetricsServer server({"127.0.0.1", 0}, [&fail]() -> std::string {
    if (fail) throw std::runtime_error("the recorder is gone");
    return kBody;
  });
  Client client(server.listening().port);
  client.send(get("/metrics"));
  CHECK(statusLine(client.response()) == "HTTP/1.1 500 Internal Server Error");
  CHECK(client.closedWithin(2s));
  fail = false;
  CHECK(statusLine(scrape(server.listening().port)) == "HTTP/1.1 200 OK");
}

TEST_CASE("metrics server: keep-alive serves two requests on one connection", "[metrics_server]") {
  Served served;
  Client client(served.port());
  client.send(get("/metrics"));
  CHECK(statusLine(client.response()) == "HTTP/1.1 200 OK");
  client.send(get("/metrics") + get("/metrics"));  // pipelined as well
  CHECK(statusLine(client.response()) == "HTTP/1.1 200 OK");
  CHECK(statusLine(client.response()) == "HTTP/1.1 200 OK");
  client.send("GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n");
  CHECK(statusLine(client.response()) == "HTTP/1.1 200 OK");
  CHECK(client.closedWithin(2s));
}

TEST_CASE("metrics server: connections over the limit are closed at once, and room comes back", "[metrics_server]") {
  const int limit = 4;
  Served served(MetricsServerLimits{limit, 8192, 10s});
  std::vector<std::unique_ptr<Client>> held;
  for (int i = 0; i < limit; ++i) held.push_back(std::make_unique<Client>(served.port()));
  for (int i = 0; i < 3; ++i) {
    Client extra(served.port());
    CHECK(extra.closedWithin(2s));
  }
  held.front()->send(get("/metrics"));  // the ones within the limit are served
  CHECK(statusLine(held.front()->response()) == "HTTP/1.1 200 OK");
  held.clear();
  // The server sees the closes when it reads them: a new connection is served within moments.
  CHECK(statusLine(scrapeWithin(served.port(), 5s)) == "HTTP/1.1 200 OK");
}

TEST_CASE("metrics server: a silent connection is closed after the idle timeout", "[metrics_server]") {
  Served served(MetricsServerLimits{32, 8192, 300ms});
  Client silent(served.port());
  Client partial(served.port());
  partial.send("GET /metrics HTTP/1.1\r\n");  // a head never finished counts as silent too
  CHECK(silent.closedWithin(3s));
  CHECK(partial.closedWithin(3s));
  Client fresh(served.port());
  fresh.send(get("/metrics"));
  CHECK(statusLine(fresh.response()) == "HTTP/1.1 200 OK");
}

TEST_CASE("metrics server: a flood of connections and garbage leaves it serving", "[metrics_server]") {
  Served served(MetricsServerLimits{8, 1024, 2s});
  std::atomic<int> failed{0};
  std::vector<std::thread> flooders;
  for (int t = 0; t < 4; ++t) {
    flooders.emplace_back([&, t] {
      for (int i = 0; i < 125; ++i) {
        const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_port = htons(static_cast<uint16_t>(served.port()));
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) ++failed;
        const std::string junk = (i + t) % 3 == 0 ? std::string(3000, '\xff') : (i % 3 == 1 ? "GET /" : "");
        if (!junk.empty()) (void)::send(fd, junk.data(), junk.size(), MSG_NOSIGNAL);
        close(fd);
      }
    });
  }
  for (auto& flooder : flooders) flooder.join();
  CHECK(failed == 0);
  CHECK(statusLine(scrapeWithin(served.port(), 5s)) == "HTTP/1.1 200 OK");
}

TEST_CASE("metrics server: an address in use is one line naming it", "[metrics_server]") {
  pltrun::test::LoopbackListener taken;
  try {
    MetricsServer server({"127.0.0.1", taken.port()}, [] { return kBody; });
    FAIL("listened on a port already taken");
  } catch (const pltrun::Error& e) {
    const std::string message = e.what();
    CHECK(e.code() == pltrun::ErrorCode::InvalidArgument);
    CHECK(message.find("127.0.0.1:" + std::to_string(taken.port())) != std::string::npos);
    CHECK(message.find("in use") != std::string::npos);
    CHECK(message.find('\n') == std::string::npos);
  }
}

TEST_CASE("metrics server: an address not on this machine is one line saying which to give", "[metrics_server]") {
  // 192.0.2.1 is TEST-NET-1 (RFC 5737), never a host's own: bind fails at once, nothing is sent.
  try {
    MetricsServer server({"192.0.2.1", 0}, [] { return kBody; });
    FAIL("listened on an address this machine does not have");
  } catch (const pltrun::Error& e) {
    const std::string message = e.what();
    CHECK(message.find("192.0.2.1:0") != std::string::npos);
    CHECK(message.find("give an address of this machine") != std::string::npos);
    CHECK(message.find('\n') == std::string::npos);
  }
}

TEST_CASE("metrics server: stopping with connections open returns promptly", "[metrics_server]") {
  auto served = std::make_unique<Served>();
  Client idle(served->port());
  Client partial(served->port());
  partial.send("GET /metr");
  Client keptAlive(served->port());
  keptAlive.send(get("/metrics"));
  CHECK(statusLine(keptAlive.response()) == "HTTP/1.1 200 OK");
  const auto started = std::chrono::steady_clock::now();
  served.reset();
  CHECK(std::chrono::steady_clock::now() - started < 2s);
  CHECK(idle.closedWithin(2s));
  CHECK(keptAlive.closedWithin(2s));
}

TEST_CASE("metrics request: method and target to a status", "[metrics_server]") {
  CHECK(pltrun::answerMetricsRequest("GET", "/metrics").status == 200);
  CHECK(pltrun::answerMetricsRequest("GET", "/metrics").body);
  CHECK_FALSE(pltrun::answerMetricsRequest("HEAD", "/metrics").body);
  CHECK(pltrun::answerMetricsRequest("GET", "/metricsx").status == 404);
  CHECK(pltrun::answerMetricsRequest("GET", "/metrics/").status == 404);
  CHECK(pltrun::answerMetricsRequest("GET", "").status == 404);
  CHECK(pltrun::answerMetricsRequest("get", "/metrics").status == 405);  // methods are case-sensitive
  CHECK(pltrun::answerMetricsRequest("POST", "/nowhere").status == 405);
  CHECK(pltrun::answerMetricsRequest("POST", "/metrics").allow == "GET, HEAD");
}

// The client library's TcpStore against a store that lies about its replies' sizes: a claim
// over the client's limit is a protocol error, and a claim under it costs memory only as
// bytes arrive (no bad_alloc, no up-front allocation of the claim).

#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>

#include "pltrun/error.h"
#include "pltrun/tcp_store.h"
#include "rendezvous/store/store_protocol.h"
#include "tests/helpers/loopback_listener.h"

using Catch::Matchers::Contains;

namespace {

// A loopback listener on port 0 that, for its one connection, writes `reply` at once and then
// holds the connection open until the test ends.
class LyingStore {
 public:
  explicit LyingStore(std::string reply) : reply_(std::move(reply)) {
    thread_ = std::thread([this] {
      connection_ = accept(listener_.fd(), nullptr, nullptr);
      if (connection_ >= 0) (void)!write(connection_, reply_.data(), reply_.size());
    });
  }
  ~LyingStore() {
    shutdown(listener_.fd(), SHUT_RDWR);
    thread_.join();
    if (connection_ >= 0) close(connection_);
  }
  int port() const { return listener_.port(); }

 private:
  pltrun::test::LoopbackListener listener_{1};
  std::string reply_;
  int connection_ = -1;
  std::thread thread_;
};

// WAIT's "stop" byte, then GET's size: what the client reads for get(key).
std::string getReplyClaiming(std::uint64_t size) {
  std::string reply(1, static_cast<char>(pltrun::rdzv::kWaitStop));
  reply.append(reinterpret_cast<const char*>(&size), sizeof size);
  return reply;
}

long peakResidentKiB() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

pltrun::TcpStoreOptions optionsFor(int port) {
  pltrun::TcpStoreOptions options;
  options.host = "127.0.0.1";
  options.port = port;
  options.connectTimeout = std::chrono::seconds(5);
  options.timeout = std::chrono::seconds(1);
  return options;
}

}  // namespace

TEST_CASE("TcpStore: a GET reply claiming 2^36 bytes is a protocol error, not bad_alloc", "[tcp_store][bounded]") {
  LyingStore store(getReplyClaiming(1ull << 36));
  pltrun::TcpStore client(optionsFor(store.port()));
  try {
    client.get("k", std::chrono::seconds(1));
    FAIL("no error");
  } catch (const pltrun::Error& error) {
    CHECK(error.code() == pltrun::ErrorCode::Protocol);
    CHECK_THAT(error.what(), Contains("over the client's limit"));
  }
}

TEST_CASE("TcpStore: a believable claim whose bytes never come times out without allocating the claim",
          "[tcp_store][bounded]") {
  LyingStore store(getReplyClaiming(1ull << 30) + "only a few bytes");
  pltrun::TcpStore client(optionsFor(store.port()));
  const long peakBefore = peakResidentKiB();
  try {
    client.get("k", std::chrono::seconds(1));
    FAIL("no error");
  } catch (const pltrun::Error& error) {
    CHECK(error.code() == pltrun::ErrorCode::Timeout);
  }
  // Filling a 1 GiB buffer up front would raise the peak by 1 GiB; a chunk is 1 MiB.
  CHECK(peakResidentKiB() - peakBefore < 256 * 1024);
}

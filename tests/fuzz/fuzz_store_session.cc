// libFuzzer target for the store server's sessions (rendezvous/store/server/store_session.cc and
// store_server.cc), through real loopback TCP connections.
//
// One io_context and two StoreServers (one open, one with a shared secret) live for the
// whole fuzzing process on 127.0.0.1, port 0. Everything runs on the fuzzer's thread: the
// clients are non-blocking sockets, and the harness polls the io_context between its own
// socket calls, so an input runs in well under a millisecond and no thread races another.
//
// Input: a flags byte, then the bytes the client(s) send.
//   bit 0  use the server with a shared secret (AUTH_HELLO/AUTH_PROOF before anything else)
//   bit 1  with bit 0: each connection first passes the mutual handshake (the harness checks
//          the server's proof and computes its own), so the fuzz bytes reach the commands
//          behind authentication
//   bit 2  framed: two connections, and the rest is a sequence of records
//            [control byte][payload]
//          control bit 7 picks the connection; bits 0-6: 127 = shut this connection's write
//          side now (no payload), else the payload is the next (bits + 1) bytes (fewer at
//          the end). Between records the server runs until it has nothing left to do, so
//          requests arrive split across reads and a connection's SET wakes the other's WAIT.
//        Not framed: one connection, and the rest is written at once.
// At the end every client shuts its write side and the harness runs the server until it
// has closed them all (replies are read and discarded throughout).
//
// Invariants checked after each input (a violation traps, which libFuzzer reports):
//   - the server closes every connection whose client has finished sending, within a
//     generous bound (no session stuck, e.g. a parked request that outlives its client);
//   - server.connectionCount() is 0, server.table().waiterCount() is 0 and
//     server.table().closeNoticeCount() is 0 (no leaked sessions, no waiters of closed
//     connections, every close notice fired or cleared), and no queue item is still
//     promised to a connection;
//   - the table's charge (bytes()) equals what it holds, counted again (recountBytes()),
//     and the connections' buffers have given back all of the buffer budget;
//   - the correct authentication handshake is accepted.
// The tables are then cleared so that an input does not depend on the ones before it.

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_store_inputs.h"
#include "rendezvous/store/server/store_server.h"
#include "rendezvous/store/store_auth.h"
#include "rendezvous/store/store_protocol.h"
#include "rendezvous/store/store_table.h"

namespace rdzv = pltrun::rdzv;

namespace {

using pltrun::fuzz::kFlagAuthenticate, pltrun::fuzz::kFlagFramed, pltrun::fuzz::kFlagSecured;
using pltrun::fuzz::kRunId, pltrun::fuzz::kSecret;
constexpr std::uint8_t kShutdownRecord = 127;
// Far above what an input takes (microseconds); reaching it means a session is stuck.
constexpr auto kDeadline = std::chrono::seconds(10);

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "fuzz_store_session: invariant violated: %s\n", what);
  __builtin_trap();
}

struct Harness {
  boost::asio::io_context context;
  std::unique_ptr<rdzv::StoreServer> open;
  std::unique_ptr<rdzv::StoreServer> secured;
  std::uint32_t nextSource = 0;

  Harness() {
    rdzv::StoreServerOptions options;
    options.host = "127.0.0.1";
    options.port = 0;
    pltrun::fuzz::applySmallLimits(options);
    // Timers are armed (their code runs) but never fire during an input, which takes far
    // less: a firing timer would make the outcome depend on the machine's speed.
    options.requestTimeout = std::chrono::milliseconds(2000);
    options.idleTimeout = std::chrono::milliseconds(2000);
    open = std::make_unique<rdzv::StoreServer>(context, options);
    options.secret = kSecret;
    options.context = kRunId;
    secured = std::make_unique<rdzv::StoreServer>(context, options);
    open->start();
    secured->start();
  }
};

Harness& harness() {
  // Never destroyed: the servers outlive every input, and no destructor runs at exit.
  static Harness* instance = new Harness;
  return *instance;
}

struct Client {
  int fd = -1;
  bool writeOpen = true;    ///< we may still send
  bool serverDone = false;  ///< the server closed the connection (EOF or reset seen)
  bool collect = false;     ///< keep received bytes (during the handshake) instead of discarding them
  std::string received;
};

// Reads whatever the server sent; returns whether anything happened.
bool drain(Client& client) {
  if (client.fd < 0 || client.serverDone) return false;
  bool progress = false;
  static char buffer[64 * 1024];  // static: not re-poisoned by ASan on every call
  for (;;) {
    ssize_t got = ::recv(client.fd, buffer, sizeof buffer, MSG_DONTWAIT);
    if (got > 0) {
      if (client.collect) client.received.append(buffer, static_cast<size_t>(got));
      progress = true;
      continue;
    }
    if (got == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      client.serverDone = true;  // EOF, or a reset when the server closed with input unread
      client.writeOpen = false;
      return true;
    }
    if (errno == EINTR) continue;
    return progress;
  }
}

// Runs the server and reads the replies until neither has anything left to do. Loopback
// (practically always) delivers a send() to the peer's socket before it returns, so one
// round in which the server ran no handler and no client received anything means all is
// quiet. Should delivery lag, requests merely arrive in fewer reads: the end of an input
// waits in runUntil for what the invariants need.
void settle(std::vector<Client>& clients) {
  Harness& h = harness();
  for (bool progress = true; progress;) {
    if (h.context.stopped()) h.context.restart();
    progress = h.context.poll() > 0;
    for (Client& client : clients) progress = drain(client) || progress;
  }
}

// Runs the server (blocking briefly when idle) until `done` holds; traps past the deadline.
template <typename Done>
void runUntil(std::vector<Client>& clients, Done done, const char* what) {
  Harness& h = harness();
  auto deadline = std::chrono::steady_clock::now() + kDeadline;
  for (;;) {
    settle(clients);
    if (done()) return;
    if (std::chrono::steady_clock::now() > deadline) fail(what);
    if (h.context.stopped()) h.context.restart();
    h.context.run_one_for(std::chrono::milliseconds(1));
  }
}

// libFuzzer's -timeout alarm (SIGALRM, every few seconds) can interrupt a blocking
// connect(): the connection goes on regardless, so wait for it and read its outcome.
bool connectFinishedAfterSignal(int fd) {
  pollfd writable{fd, POLLOUT, 0};
  int ready;
  do {
    ready = ::poll(&writable, 1, 5000);
  } while (ready < 0 && errno == EINTR);
  int error = 0;
  socklen_t length = sizeof error;
  if (ready != 1 || ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0) return false;
  errno = error;
  return error == 0;
}

Client connectTo(int port) {
  Client client;
  client.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (client.fd < 0) fail("socket() failed");
  // Spread the clients over 127.0.0.0/8 source addresses: each closed connection leaves a
  // TIME_WAIT entry on the client side, and one source address has only ~28k ports.
  Harness& h = harness();
  std::uint32_t source = 0x7F000000u | (2 + h.nextSource++ % 0xFFFF00u);
  int yes = 1;
  ::setsockopt(client.fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &yes, sizeof yes);
  sockaddr_in local{};
  local.sin_family = AF_INET;
  local.sin_addr.s_addr = htonl(source);
  (void)::bind(client.fd, reinterpret_cast<const sockaddr*>(&local), sizeof local);  // best effort
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  // Loopback connects complete from the listen backlog, before the server accepts.
  if (::connect(client.fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0 &&
      !(errno == EINTR && connectFinishedAfterSignal(client.fd))) {
    std::perror("fuzz_store_session: connect");
    fail("cannot connect to the store server");
  }
  ::fcntl(client.fd, F_SETFL, ::fcntl(client.fd, F_GETFL) | O_NONBLOCK);
  return client;
}

// Sends all of `bytes` unless the server closes the connection first.
void sendAll(std::vector<Client>& clients, size_t index, std::string_view bytes) {
  Client& client = clients[index];
  while (!bytes.empty() && client.writeOpen) {
    ssize_t sent = ::send(client.fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent > 0) {
      bytes.remove_prefix(static_cast<size_t>(sent));
    } else if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      settle(clients);  // the server reads, freeing the socket buffer
    } else {
      client.writeOpen = false;  // EPIPE/ECONNRESET: the server closed it
    }
  }
}

void shutdownWrite(Client& client) {
  if (!client.writeOpen) return;
  client.writeOpen = false;
  ::shutdown(client.fd, SHUT_WR);
}

void authenticate(std::vector<Client>& clients, size_t index) {
  Client& client = clients[index];
  client.collect = true;
  client.received.clear();
  rdzv::Handshake handshake = pltrun::fuzz::clientHandshake();
  sendAll(clients, index, pltrun::fuzz::helloRequest(handshake));
  const size_t answerSize = rdzv::kAuthNonceSize + rdzv::kAuthDigestSize;
  runUntil(
      clients, [&] { return client.received.size() >= answerSize || client.serverDone; }, "no AUTH_HELLO answer");
  std::string request;
  if (const char* problem = pltrun::fuzz::answerServer(handshake, client.received, request)) fail(problem);
  client.received.clear();
  sendAll(clients, index, request);
  runUntil(
      clients, [&] { return !client.received.empty() || client.serverDone; }, "no AUTH_PROOF reply");
  if (client.received != std::string(1, static_cast<char>(rdzv::kAuthAccepted))) {
    fail("the correct AUTH_PROOF was not accepted");
  }
  client.collect = false;
  client.received.clear();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Quiet unless asked (PLTRUN_FUZZ_LOG=1, e.g. to see why the server closed a connection
  // while reproducing a crash).
  const char* log = std::getenv("PLTRUN_FUZZ_LOG");
  spdlog::set_level(log && *log && std::string_view(log) != "0" ? spdlog::level::debug : spdlog::level::off);
  harness();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, size_t size) {
  if (size < 1) return 0;
  Harness& h = harness();
  const std::uint8_t flags = data[0];
  std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  const bool secured = flags & kFlagSecured;
  const bool framed = flags & kFlagFramed;
  rdzv::StoreServer& server = secured ? *h.secured : *h.open;

  std::vector<Client> clients;
  clients.reserve(2);
  for (int i = 0; i < (framed ? 2 : 1); ++i) clients.push_back(connectTo(server.port()));
  runUntil(
      clients, [&] { return server.connectionCount() == clients.size(); }, "connections not accepted");
  if (secured && (flags & kFlagAuthenticate)) {
    for (size_t i = 0; i < clients.size(); ++i) authenticate(clients, i);
  }

  if (!framed) {
    sendAll(clients, 0, rest);
    settle(clients);
  } else {
    while (!rest.empty()) {
      auto control = static_cast<std::uint8_t>(rest[0]);
      rest.remove_prefix(1);
      size_t index = control >> 7;
      std::uint8_t length = control & 0x7F;
      if (length == kShutdownRecord) {
        shutdownWrite(clients[index]);
      } else {
        std::string_view payload = rest.substr(0, length + 1u);
        rest.remove_prefix(payload.size());
        sendAll(clients, index, payload);
      }
      settle(clients);
    }
  }

  for (Client& client : clients) shutdownWrite(client);
  runUntil(
      clients,
      [&] {
        for (const Client& client : clients) {
          if (!client.serverDone) return false;
        }
        return server.connectionCount() == 0;
      },
      "the server did not close a connection whose client had finished sending");
  if (server.connectionCount() != 0) fail("sessions left after every connection closed");
  if (server.table().waiterCount() != 0) fail("waiters left after every connection closed");
  if (server.table().closeNoticeCount() != 0) fail("close notices left after every connection closed");
  if (server.table().queuePromiseHolders() != 0) fail("queue items promised to closed connections");
  if (server.table().bytes() != server.table().recountBytes()) fail("the table's charge is not what it holds");
  if (server.buffers().held() != 0) fail("buffer budget still held after every connection closed");

  for (Client& client : clients) ::close(client.fd);
  settle(clients);
  h.open->table() = rdzv::StoreTable(h.open->table().limits());
  h.secured->table() = rdzv::StoreTable(h.secured->table().limits());
  return 0;
}

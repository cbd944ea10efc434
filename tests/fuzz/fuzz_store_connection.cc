// libFuzzer target for the store server's connection state machine
// (rendezvous/store/server/store_connection.{h,cc}), driven directly: no sockets, no event
// loop, no clock. Two connections share one table and one buffer budget; the harness plays
// the Asio shell (store_session.cc): it reads a connection's bytes only while the machine
// asks for more, within readRoom(), hands out its replies one write at a time, delivers its
// wakeups later (never inside the table update that woke them), and fires its deadlines
// when the harness's own time passes them. Each input starts from a fresh table.
//
// Input: a flags byte, then the bytes the client(s) send (the format of fuzz_store_session,
// whose corpus seeds this one, with more records).
//   bit 0  the server has a shared secret (AUTH_HELLO/AUTH_PROOF before anything else)
//   bit 1  with bit 0: each connection first passes the mutual handshake (the harness checks
//          the server's proof and computes its own), so the bytes reach the commands behind it
//   bit 2  framed: two connections, and the rest is a sequence of records
//            [control byte][payload]
//          control bit 7 picks the connection; bits 0-6:
//            127  the peer closes its sending side (the machine sees it once it has read
//                 what was sent before)
//            126  the connection's write in flight completes
//            125  the wakeups queued so far are delivered (as the event loop's next turn)
//            124  half a second passes (deadlines fire)
//            123  the server closes the connection (as when it evicts one)
//            else the payload is the next (bits + 1) bytes (fewer at the end)
//        Not framed: one connection, and the rest is sent at once.
//   bit 3  manual: writes complete and wakeups arrive only on their records; otherwise
//          both happen after every record until nothing is left to do.
// (Replies past the high-water mark, 16 MiB, need inputs far longer than libFuzzer's: the
// unit tests in tests/store/store_connection_test.cc cover that pause.)
//
// Invariants checked after every record (a violation traps, which libFuzzer reports):
//   - the budget's bytes held are exactly what the connections say they hold, a closed
//     connection holds none and gives no more replies, an open one holds exactly its
//     unwritten replies for them;
//   - the table's charge (bytes()) equals what it holds, counted again;
//   - a connection closes once, is reported authenticated at most once and only with a
//     secret, and no wakeup reaches a closed connection;
// and after the last record, with both connections closed: no waiter, no close notice,
// no promised queue item, nothing of the buffer budget held; the correct handshake is
// accepted.

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fuzz_store_inputs.h"
#include "rendezvous/store/server/store_connection.h"
#include "rendezvous/store/store_auth.h"
#include "rendezvous/store/store_protocol.h"
#include "rendezvous/store/store_table.h"

namespace rdzv = pltrun::rdzv;
using Clock = rdzv::StoreConnection::Clock;

namespace {

using pltrun::fuzz::kFlagAuthenticate, pltrun::fuzz::kFlagFramed, pltrun::fuzz::kFlagSecured;
using pltrun::fuzz::kRunId, pltrun::fuzz::kSecret;
constexpr std::uint8_t kFlagManual = 8;  // this target's own: time and completions by record
constexpr std::uint8_t kPeerClosed = 127, kWriteDone = 126, kDeliverWakeups = 125, kTimePasses = 124,
                       kServerCloses = 123;
constexpr size_t kReadSize = 64 * 1024;  // the shell's one read buffer

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "fuzz_store_connection: invariant violated: %s\n", what);
  __builtin_trap();
}

rdzv::StoreServerOptions makeOptions(bool secured) {
  rdzv::StoreServerOptions options;
  pltrun::fuzz::applySmallLimits(options);
  // A few records of kTimePasses reach each deadline.
  options.requestTimeout = std::chrono::milliseconds(2000);
  options.idleTimeout = std::chrono::milliseconds(3000);
  options.authTimeout = std::chrono::milliseconds(1000);
  if (secured) {
    options.secret = kSecret;
    options.context = kRunId;
  }
  return options;
}

struct Client {
  std::unique_ptr<rdzv::StoreConnection> connection;
  std::string socket;   ///< bytes sent, not yet read by the server
  std::string writing;  ///< the write in flight
  std::string received;
  bool reading = true;  ///< the shell waits for bytes
  bool eof = false;     ///< the peer closed its sending side
  bool closed = false;
  bool authenticated = false;
};

struct Harness {
  rdzv::StoreServerOptions options;
  rdzv::StoreTable table;
  rdzv::BufferBudget buffers;
  Clock::time_point now{std::chrono::hours(1)};
  Client clients[2];
  std::vector<std::pair<size_t, std::uint64_t>> wakeups;  ///< (client, generation), in order

  Harness(bool secured, size_t count)
      : options(makeOptions(secured)),
        table(rdzv::TableLimits{options.limits.maxValueSize, options.maxStoreBytes, options.maxStoreKeys}),
        buffers(options.maxStoreBytes) {
    for (size_t i = 0; i < count; ++i) {
      clients[i].connection = std::make_unique<rdzv::StoreConnection>(
          options, table, buffers, i + 1,
          [this, i](std::uint64_t generation) {
            if (clients[i].closed) fail("a wakeup reached a closed connection");
            wakeups.emplace_back(i, generation);
          },
          now);
    }
  }
};

// What the shell does with a step: close, report, write, read on.
void perform(Harness& h, size_t index, const rdzv::ConnectionStep& step, bool fromRead) {
  Client& client = h.clients[index];
  if (step.authenticated) {
    if (client.authenticated || h.options.secret.empty()) fail("authenticated twice, or without a secret");
    client.authenticated = true;
  }
  if (step.closed) {
    if (client.closed) fail("a connection closed twice");
    client.closed = true;
    client.reading = false;
    return;
  }
  if (client.closed) return;
  if (fromRead) client.reading = step.readMore;
  if (step.readMore) client.reading = true;
  if (client.writing.empty()) client.connection->takeReplies(client.writing);
}

// Reads what the client sent while the machine wants it, as the shell's read loop.
bool pump(Harness& h, size_t index) {
  Client& client = h.clients[index];
  bool progress = false;
  while (!client.closed && client.reading && (!client.socket.empty() || client.eof)) {
    progress = true;
    if (client.socket.empty()) {
      perform(h, index, client.connection->onPeerClosed(), true);
      break;
    }
    const std::uint64_t room = client.connection->readRoom(kReadSize);
    if (room == 0) {
      const rdzv::ConnectionStep step = client.connection->takeStep();
      if (!step.closed) fail("no room to read, but the connection is open");
      perform(h, index, step, true);
      break;
    }
    const size_t size = static_cast<size_t>(std::min<std::uint64_t>(room, client.socket.size()));
    const std::string bytes = client.socket.substr(0, size);
    client.socket.erase(0, size);
    perform(h, index, client.connection->onBytes(bytes, h.now), true);
  }
  return progress;
}

bool completeWrite(Harness& h, size_t index) {
  Client& client = h.clients[index];
  if (client.writing.empty()) return false;
  client.received += client.writing;
  client.writing.clear();
  perform(h, index, client.connection->onWritten(h.now), false);
  return true;
}

bool deliverWakeups(Harness& h) {
  auto wakeups = std::move(h.wakeups);
  h.wakeups.clear();
  for (const auto& [index, generation] : wakeups) {
    perform(h, index, h.clients[index].connection->onKeysReady(generation, h.now), false);
  }
  return !wakeups.empty();
}

void timePasses(Harness& h, size_t count) {
  h.now += std::chrono::milliseconds(500);
  for (size_t i = 0; i < count; ++i) {
    const auto deadline = h.clients[i].connection->nextDeadline();
    if (deadline && *deadline <= h.now) perform(h, i, h.clients[i].connection->onTimer(h.now), false);
  }
}

// Everything left to do, until nothing is (the event loop running dry).
void settle(Harness& h, size_t count) {
  for (bool progress = true; progress;) {
    progress = deliverWakeups(h);
    for (size_t i = 0; i < count; ++i) {
      progress = completeWrite(h, i) || progress;
      progress = pump(h, i) || progress;
    }
  }
}

void checkInvariants(Harness& h, size_t count) {
  std::uint64_t held = 0;
  for (size_t i = 0; i < count; ++i) {
    rdzv::StoreConnection& connection = *h.clients[i].connection;
    held += connection.heldBuffers();
    if (connection.closed() != h.clients[i].closed) fail("a connection closed without saying so");
    if (connection.closed() && connection.heldBuffers() != 0) fail("a closed connection holds buffers");
    if (!connection.closed() && connection.heldForReplies() != connection.repliesPending()) {
      fail("the buffer budget charged for replies is not what is unwritten");
    }
    std::string none;
    if (connection.closed() && connection.takeReplies(none)) fail("a closed connection gave replies");
  }
  if (held != h.buffers.held()) fail("the buffer budget holds what no connection holds");
  if (h.table.bytes() != h.table.recountBytes()) fail("the table's charge is not what it holds");
}

std::string takeAll(Harness& h, size_t index) {
  while (completeWrite(h, index)) {
  }
  return std::exchange(h.clients[index].received, std::string());
}

void authenticate(Harness& h, size_t index) {
  rdzv::Handshake handshake = pltrun::fuzz::clientHandshake();
  h.clients[index].socket += pltrun::fuzz::helloRequest(handshake);
  pump(h, index);
  std::string proofRequest;
  if (const char* problem = pltrun::fuzz::answerServer(handshake, takeAll(h, index), proofRequest)) fail(problem);
  h.clients[index].socket += proofRequest;
  pump(h, index);
  if (takeAll(h, index) != std::string(1, static_cast<char>(rdzv::kAuthAccepted)) || !h.clients[index].authenticated) {
    fail("the correct AUTH_PROOF was not accepted");
  }
}

// One record of a framed input; returns what is left.
std::string_view playRecord(Harness& h, std::string_view rest, bool manual) {
  const auto control = static_cast<std::uint8_t>(rest[0]);
  rest.remove_prefix(1);
  const size_t index = control >> 7;
  const std::uint8_t code = control & 0x7F;
  if (code == kPeerClosed) {
    h.clients[index].eof = true;
  } else if (code == kWriteDone) {
    completeWrite(h, index);
  } else if (code == kDeliverWakeups) {
    deliverWakeups(h);
  } else if (code == kTimePasses) {
    timePasses(h, 2);
  } else if (code == kServerCloses) {
    perform(h, index, h.clients[index].connection->close("evicted"), false);
  } else {
    const std::string_view payload = rest.substr(0, code + 1u);
    rest.remove_prefix(payload.size());
    h.clients[index].socket.append(payload);
  }
  if (manual) {
    for (size_t i = 0; i < 2; ++i) pump(h, i);
  } else {
    settle(h, 2);
  }
  return rest;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  spdlog::set_level(spdlog::level::off);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::uint8_t flags = data[0];
  std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  const bool secured = flags & kFlagSecured, framed = flags & kFlagFramed;
  const size_t count = framed ? 2 : 1;
  Harness h(secured, count);
  if (secured && (flags & kFlagAuthenticate)) {
    for (size_t i = 0; i < count; ++i) authenticate(h, i);
  }
  checkInvariants(h, count);
  if (!framed) {
    h.clients[0].socket.append(rest);
    settle(h, count);
    checkInvariants(h, count);
  } else {
    while (!rest.empty()) {
      rest = playRecord(h, rest, flags & kFlagManual);
      checkInvariants(h, count);
    }
  }
  // Every client finishes sending; the server reads what is left, then closes.
  for (size_t i = 0; i < count; ++i) h.clients[i].eof = true;
  settle(h, count);
  for (size_t i = 0; i < count; ++i) {
    if (!h.clients[i].closed) perform(h, i, h.clients[i].connection->onPeerClosed(), false);
  }
  deliverWakeups(h);
  checkInvariants(h, count);
  if (h.table.waiterCount() != 0) fail("waiters left after every connection closed");
  if (h.table.closeNoticeCount() != 0) fail("close notices left after every connection closed");
  if (h.table.queuePromiseHolders() != 0) fail("queue items promised to closed connections");
  if (h.buffers.held() != 0) fail("buffer budget still held after every connection closed");
  return 0;
}

// The store connection's state machine (rendezvous/store/server/store_connection.h) driven
// directly: bytes and events in, replies and steps out, the time given by the test. No
// sockets and no waiting: a deadline passes because the test says it is later.

#include "rendezvous/store/server/store_connection.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "store/torch2_frames.h"

namespace pltrun::test {
namespace {

using rdzv::Command;
using rdzv::StoreConnection;
using Clock = StoreConnection::Clock;
using std::chrono::milliseconds;

const Clock::time_point kStart{};  // the tests' time 0: the machine reads no clock of its own

// What the connections of one server share.
struct Server {
  rdzv::StoreServerOptions options;
  rdzv::StoreTable table;
  rdzv::BufferBudget buffers{1024 * 1024};

  Server() { options.requestTimeout = milliseconds(3000); }
};

// One connection and the wakeups it asked for (the shell would post each to the event loop).
struct Client {
  std::vector<std::uint64_t> woken;
  StoreConnection connection;

  Client(Server& server, rdzv::StoreTable::OwnerId id, Clock::time_point now = kStart)
      : connection(
            server.options, server.table, server.buffers, id,
            [this](std::uint64_t generation) { woken.push_back(generation); }, now) {}

  rdzv::ConnectionStep send(const std::string& bytes, Clock::time_point now = kStart) {
    return connection.onBytes(bytes, now);
  }
  /// The replies given so far, written (as the shell would).
  std::string replies(Clock::time_point now = kStart) {
    std::string writing;
    if (!connection.takeReplies(writing)) return "";
    connection.onWritten(now);
    return writing;
  }
};

std::string byteReply(std::uint8_t value) {
  std::string reply;
  rdzv::appendU8(reply, value);
  return reply;
}

std::string valueReply(const std::string& value) {
  std::string reply;
  rdzv::appendBytes(reply, value);
  return reply;
}

std::string setFrame(const std::string& key, const std::string& value) {
  return frame(withKeys(Command::Set, {key}, {value}));
}

// The first half of pltrun's handshake, as a client sends it; returns the server's nonce.
std::string helloAndServerNonce(Client& client, const rdzv::Handshake& handshake) {
  client.send(frame(withKeys(Command::AuthHello, {handshake.context}, {handshake.clientNonce})));
  const std::string answer = client.replies();
  REQUIRE(answer.size() == rdzv::kAuthNonceSize + rdzv::kAuthDigestSize);
  return answer.substr(0, rdzv::kAuthNonceSize);
}

std::string proofFrame(const rdzv::Digest& proof) {
  std::string request(1, static_cast<char>(0xA1));  // AUTH_PROOF
  request.append(reinterpret_cast<const char*>(proof.data()), proof.size());
  return request;
}

}  // namespace

TEST_CASE("a request split byte by byte is answered once, when its last byte arrives", "[store][connection]") {
  Server server;
  Client client(server, 1);
  REQUIRE(client.send(validate() + setFrame("key", "value")).readMore);
  const std::string get = frame(withKeys(Command::Get, {"key"}));
  for (size_t i = 0; i + 1 < get.size(); ++i) {
    const rdzv::ConnectionStep step = client.send(get.substr(i, 1));
    CHECK(step.readMore);
    CHECK_FALSE(step.closed);
    CHECK(client.connection.outbox().empty());
  }
  client.send(get.substr(get.size() - 1));
  CHECK(client.replies() == valueReply("value"));
  CHECK(client.replies().empty());
}

TEST_CASE("a partial frame closes the connection once its request deadline passes", "[store][connection]") {
  Server server;
  Client client(server, 1);
  const std::string set = setFrame("key", std::string(100, 'v'));
  client.send(validate() + set.substr(0, 10), kStart);
  REQUIRE(client.connection.nextDeadline() == kStart + milliseconds(3000));
  // More bytes of the same request do not move its deadline.
  client.send(set.substr(10, 10), kStart + milliseconds(2000));
  CHECK(client.connection.nextDeadline() == kStart + milliseconds(3000));
  CHECK_FALSE(client.connection.onTimer(kStart + milliseconds(2999)).closed);
  const rdzv::ConnectionStep step = client.connection.onTimer(kStart + milliseconds(3000));
  CHECK(step.closed);
  CHECK(step.closeReason == "a request started arriving but was not complete after 3000 ms");
  CHECK(server.buffers.held() == 0);
  CHECK_FALSE(server.table.contains("key"));
}

TEST_CASE("a request completed in time clears its deadline", "[store][connection]") {
  Server server;
  Client client(server, 1);
  const std::string set = setFrame("key", "value");
  client.send(validate() + set.substr(0, 5));
  REQUIRE(client.connection.nextDeadline().has_value());
  client.send(set.substr(5), kStart + milliseconds(100));
  CHECK_FALSE(client.connection.nextDeadline().has_value());
  CHECK_FALSE(client.connection.onTimer(kStart + milliseconds(5000)).closed);
  CHECK(*server.table.peek("key") == "value");
}

TEST_CASE("a wrong shared-secret proof closes the connection unauthenticated", "[store][connection][auth]") {
  Server server;
  server.options.secret = "the-secret";
  Client client(server, 1);
  rdzv::Handshake handshake{std::string(rdzv::kAuthNonceSize, 'n'), "", "run"};
  handshake.serverNonce = helloAndServerNonce(client, handshake);
  const rdzv::ConnectionStep step = client.send(proofFrame(rdzv::clientProof("another-secret", handshake)));
  CHECK(step.closed);
  CHECK_FALSE(step.authenticated);
  CHECK(step.closeReason == "authentication failed: wrong shared secret");
  CHECK_FALSE(client.connection.authenticated());
}

TEST_CASE("the right proof authenticates once and stops the authentication deadline", "[store][connection][auth]") {
  Server server;
  server.options.secret = "the-secret";
  Client client(server, 1);
  REQUIRE(client.connection.nextDeadline() == kStart + server.options.authTimeout);
  rdzv::Handshake handshake{std::string(rdzv::kAuthNonceSize, 'n'), "", "run"};
  handshake.serverNonce = helloAndServerNonce(client, handshake);
  const rdzv::ConnectionStep step = client.send(proofFrame(rdzv::clientProof("the-secret", handshake)));
  CHECK(step.authenticated);
  CHECK_FALSE(step.closed);
  CHECK(client.replies() == byteReply(rdzv::kAuthAccepted));
  CHECK_FALSE(client.connection.nextDeadline().has_value());
  CHECK_FALSE(client.send(validate() + setFrame("key", "value")).authenticated);
  CHECK(server.table.contains("key"));
}

TEST_CASE("a connection that has not authenticated by its deadline is closed", "[store][connection][auth]") {
  Server server;
  server.options.secret = "the-secret";
  server.options.authTimeout = milliseconds(500);
  Client client(server, 1);
  CHECK_FALSE(client.connection.onTimer(kStart + milliseconds(499)).closed);
  const rdzv::ConnectionStep step = client.connection.onTimer(kStart + milliseconds(500));
  CHECK(step.closed);
  CHECK(step.closeReason == "did not authenticate within 500 ms");
}

TEST_CASE("an unauthenticated SET is refused on its first byte", "[store][connection][auth]") {
  Server server;
  server.options.secret = "the-secret";
  Client client(server, 1);
  const std::string set = setFrame("key", std::string(1000, 'v'));
  REQUIRE(client.send(validate()).readMore);
  const rdzv::ConnectionStep step = client.send(set.substr(0, 1));
  CHECK(step.closed);
  CHECK(step.closeReason.rfind("refused SET: this store requires", 0) == 0);
  CHECK(server.buffers.held() == 0);
}

TEST_CASE("a request past the connections' buffer budget closes only its connection", "[store][connection]") {
  Server server;
  server.buffers = rdzv::BufferBudget(256);
  Client big(server, 1), small(server, 2);
  CHECK(big.connection.readRoom(65536) == 256);
  const rdzv::ConnectionStep step = big.send(validate() + setFrame("key", std::string(300, 'v')));
  CHECK(step.closed);
  CHECK(step.closeReason ==
        "its requests would take the buffers of all connections past their limit of 256 bytes "
        "(--max-store-bytes)");
  CHECK(server.buffers.held() == 0);
  CHECK_FALSE(small.send(validate() + setFrame("key", "value")).closed);
  CHECK(*server.table.peek("key") == "value");
}

TEST_CASE("a spent buffer budget leaves no room to read and closes the connection", "[store][connection]") {
  Server server;
  server.buffers = rdzv::BufferBudget(256);
  Client client(server, 1);
  REQUIRE(server.buffers.take(256));  // another connection's
  CHECK(client.connection.readRoom(65536) == 0);
  const rdzv::ConnectionStep step = client.connection.takeStep();
  CHECK(step.closed);
  CHECK(step.closeReason.find("past their limit of 256 bytes") != std::string::npos);
}

TEST_CASE("replies over the high-water mark stop decoding and reading until written", "[store][connection]") {
  Server server;
  server.buffers = rdzv::BufferBudget(256ull * 1024 * 1024);
  Client client(server, 1);
  const std::string large(StoreConnection::kReplyHighWater + 1, 'v');
  client.send(validate() + setFrame("large", large) + setFrame("small", "s"));
  const rdzv::ConnectionStep step =
      client.send(frame(withKeys(Command::Get, {"large"})) + frame(withKeys(Command::Get, {"small"})));
  CHECK_FALSE(step.readMore);
  CHECK(client.connection.repliesPending() == valueReply(large).size());  // the second GET waits
  std::string writing;
  REQUIRE(client.connection.takeReplies(writing));
  const rdzv::ConnectionStep written = client.connection.onWritten(kStart);
  CHECK_FALSE(written.readMore);  // the second reply is to be written first
  CHECK(client.connection.repliesPending() == valueReply("s").size());
  writing.clear();
  REQUIRE(client.connection.takeReplies(writing));
  CHECK(writing == valueReply("s"));
  CHECK(client.connection.onWritten(kStart).readMore);
  CHECK(client.connection.repliesPending() == 0);
}

TEST_CASE("a parked WAIT is answered on the waker's later call, not inside the SET", "[store][connection]") {
  Server server;
  Client waiter(server, 1), setter(server, 2);
  waiter.send(validate() + frame(withKeys(Command::Wait, {"key"})));
  REQUIRE(waiter.connection.parked());
  setter.send(validate() + setFrame("key", "value"));
  REQUIRE(waiter.woken.size() == 1);
  CHECK(waiter.connection.outbox().empty());
  waiter.connection.onKeysReady(waiter.woken[0], kStart);
  CHECK(waiter.replies() == byteReply(rdzv::kWaitStop));
  CHECK_FALSE(waiter.connection.parked());
}

TEST_CASE("a wakeup for a cancelled WAIT does not answer the WAIT parked after it", "[store][connection]") {
  Server server;
  Client waiter(server, 1), setter(server, 2);
  waiter.send(validate() + frame(withKeys(Command::Wait, {"key"})));
  setter.send(validate() + setFrame("key", "value"));
  REQUIRE(waiter.woken.size() == 1);
  waiter.send(frame(withKeys(Command::CancelWait, {})) + frame(withKeys(Command::Wait, {"other"})));
  CHECK(waiter.replies() == byteReply(rdzv::kWaitCanceled));
  REQUIRE(waiter.connection.parked());
  waiter.connection.onKeysReady(waiter.woken[0], kStart);
  CHECK(waiter.replies().empty());
  CHECK(waiter.connection.parked());
  CHECK(server.table.waiterCount() == 1);
}

TEST_CASE("a peer gone with a parked WAIT leaves no waiter, no ephemeral key and fires its close notice",
          "[store][connection]") {
  Server server;
  Client client(server, 7);
  client.send(validate() + frame(withKeys(Command::SetEphemeral, {"mine"}, {"1"})) +
              frame(withKeys(Command::OnCloseSet, {"gone"}, {"7"})) + frame(withKeys(Command::Wait, {"never"})));
  REQUIRE(client.connection.parked());
  REQUIRE(server.table.waiterCount() == 1);
  REQUIRE(server.table.contains("mine"));
  const rdzv::ConnectionStep step = client.connection.onPeerClosed();
  CHECK(step.closed);
  CHECK(step.closeReason.empty());
  CHECK(server.table.waiterCount() == 0);
  CHECK_FALSE(server.table.contains("mine"));
  CHECK(*server.table.peek("gone") == "7");
  CHECK(server.buffers.held() == 0);
}

TEST_CASE("a connection idle past its idle timeout closes, unless a WAIT of its is parked", "[store][connection]") {
  Server server;
  server.options.idleTimeout = milliseconds(1000);
  Client idle(server, 1), waiting(server, 2);
  waiting.send(validate() + frame(withKeys(Command::Wait, {"key"})), kStart + milliseconds(10));
  const rdzv::ConnectionStep parked = waiting.connection.onTimer(kStart + milliseconds(1010));
  CHECK_FALSE(parked.closed);
  CHECK(waiting.connection.nextDeadline() == kStart + milliseconds(2010));
  const rdzv::ConnectionStep step = idle.connection.onTimer(kStart + milliseconds(1000));
  CHECK(step.closed);
  CHECK(step.closeReason == "idle for 1000 ms");
}

TEST_CASE("bytes sent while a WAIT is parked past their limit close the connection", "[store][connection]") {
  Server server;
  Client client(server, 1);
  client.send(validate() + frame(withKeys(Command::Wait, {"key"})));
  REQUIRE(client.connection.parked());
  // A SET with a long key, cut short: nothing a client whose WAIT is parked sends.
  const std::string set = setFrame(std::string(10000, 'k'), "v");
  CHECK(client.send(set.substr(0, StoreConnection::kParkedInputLimit)).readMore);
  const rdzv::ConnectionStep step = client.send(set.substr(StoreConnection::kParkedInputLimit, 1));
  CHECK(step.closed);
  CHECK(step.closeReason.rfind("sent 4097 bytes while its WAIT was parked", 0) == 0);
  CHECK(server.table.waiterCount() == 0);
}

}  // namespace pltrun::test

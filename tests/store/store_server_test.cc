// The store server under many, bad, slow and vanishing clients, on loopback, port 0:
// limits close only the offending connection, parked waits are cleaned up, a stopped
// server gives clients a network error instead of a hang, and the standalone
// pltrun-store executable behaves as scripts expect.

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <thread>

#include "helpers/child_process.h"
#include "helpers/temp_dir.h"
#include "pltrun/error.h"
#include "rendezvous/store/store_auth.h"
#include "rendezvous/store/store_protocol.h"
#include "store/raw_connection.h"
#include "store/server_thread.h"

using namespace pltrun;
using namespace pltrun::test;
using namespace std::chrono_literals;

namespace {

std::string encode(rdzv::Dialect dialect, rdzv::Command command, std::vector<std::string> keys = {},
                   std::vector<std::string> values = {}) {
  rdzv::Request request;
  request.command = command;
  request.keys = std::move(keys);
  request.values = std::move(values);
  if (command == rdzv::Command::Validate) request.number = rdzv::kValidationMagic;
  return rdzv::encodeRequest(dialect, request);
}

template <typename Predicate>
bool eventually(Predicate predicate, std::chrono::milliseconds limit = 5s) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!predicate()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

}  // namespace

TEST_CASE("many clients on many threads share one table", "[store][server]") {
  ServerThread server;
  constexpr int kThreads = 16, kClientsPerThread = 8;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int thread = 0; thread < kThreads; ++thread) {
    threads.emplace_back([&, thread] {
      try {
        std::vector<std::unique_ptr<TcpStore>> clients;
        for (int i = 0; i < kClientsPerThread; ++i) {
          clients.push_back(
              std::make_unique<TcpStore>(server.clientOptions(i % 2 ? StoreDialect::Torch113 : StoreDialect::Torch2)));
        }
        for (int round = 0; round < 20; ++round) {
          for (auto& client : clients) {
            client->add("total", 1);
            client->set("t" + std::to_string(thread), std::to_string(round));
          }
        }
      } catch (...) {
        ++failures;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(failures == 0);
  TcpStore reader(server.clientOptions());
  CHECK(reader.add("total", 0) == kThreads * kClientsPerThread * 20);
  CHECK(reader.get("t15", 5s) == "19");
}

TEST_CASE("both dialects share keys on one server", "[store][server]") {
  ServerThread server;
  TcpStore modern(server.clientOptions(StoreDialect::Torch2));
  TcpStore legacy(server.clientOptions(StoreDialect::Torch113));
  modern.set("from-2x", "a");
  legacy.set("from-113", "b");
  CHECK(legacy.get("from-2x", 5s) == "a");
  CHECK(modern.get("from-113", 5s) == "b");
  modern.ping();
  legacy.ping();
}

TEST_CASE("a client killed mid-wait is cleaned up and others keep being served", "[store][server]") {
  ServerThread server;
  {
    RawConnection client(server.port());
    client.send(encode(rdzv::Dialect::Torch2, rdzv::Command::Validate));
    client.send(encode(rdzv::Dialect::Torch2, rdzv::Command::Wait, {"never-set"}));
    client.send(encode(rdzv::Dialect::Torch2, rdzv::Command::SetEphemeral, {"mine"}, {"x"}));
    REQUIRE(eventually([&] { return server.waiters() == 1; }));
    client.abort();
  }
  CHECK(eventually([&] { return server.waiters() == 0 && server.connections() == 0; }));
  TcpStore other(server.clientOptions());
  other.set("never-set", "now");  // wakes nobody: the waiter is gone
  CHECK(other.get("never-set", 5s) == "now");
  CHECK_FALSE(other.check({"mine"}));
}

TEST_CASE("a close notice fires however its connection ends", "[store][server]") {
  ServerThread server;
  TcpStore watcher(server.clientOptions());
  const std::string notice = R"({"reason":"node_lost"})";
  RawConnection client(server.port());
  client.send(encode(rdzv::Dialect::Torch2, rdzv::Command::Validate));
  // The raw client names wire keys: TcpStore's "ended" travels as "/ended".
  client.send(encode(rdzv::Dialect::Torch2, rdzv::Command::OnCloseSet, {"/ended"}, {notice}));
  client.send(encode(rdzv::Dialect::Torch2, rdzv::Command::SetEphemeral, {"/registered"}, {""}));
  REQUIRE(watcher.get("registered", 5s).empty());
  CHECK_FALSE(watcher.check({"ended"}));

  std::string why;
  SECTION("killed (a reset)") {
    why = "reset";
    client.abort();
  }
  SECTION("closed by the server on a malformed request") {
    why = "malformed";
    client.send(std::string("\x55garbage", 8));
    CHECK(client.closedByServer());
  }
  SECTION("closed by the server on a bad ADD") {
    why = "bad ADD";
    watcher.set("text", "abc");
    client.send(encode(rdzv::Dialect::Torch2, rdzv::Command::Add, {"/text"}) + std::string(8, '\0'));
    CHECK(client.closedByServer());
  }
  CAPTURE(why);
  auto start = std::chrono::steady_clock::now();
  CHECK(watcher.get("ended", 5s) == notice);
  CHECK(std::chrono::steady_clock::now() - start < 2s);
  CHECK(eventually([&] { return server.connections() == 1 && server.waiters() == 0; }));
}

TEST_CASE(
    "a close notice fires when the server closes an idle client, and a reconnect does not register it "
    "again",
    "[store][server]") {
  rdzv::StoreServerOptions options;
  // Long enough for the watcher to park its GET on a loaded machine: with 400 ms the
  // watcher itself was closed as idle first when the test thread was descheduled.
  options.idleTimeout = 2s;
  ServerThread server(options);
  auto owner = std::make_unique<TcpStore>(server.clientOptions());
  TcpStore watcher(server.clientOptions());  // parked in a wait, so never idle
  owner->setCloseNotice("ended", "idle");
  CHECK(watcher.get("ended", 10s) == "idle");

  TcpStore checker(server.clientOptions());
  CHECK(checker.deleteKey("ended"));
  // The owner's connection is gone: its next call fails, and the one after reconnects.
  CHECK_THROWS_AS(owner->ping(), Error);
  owner->setEphemeral("marker", "");
  CHECK(checker.get("marker", 5s).empty());
  owner.reset();
  REQUIRE(eventually([&] { return !checker.check({"marker"}); }));
  CHECK_FALSE(checker.check({"ended"}));  // the notice fired once, with the old connection
}

TEST_CASE("a client whose wait ends after the idle timeout gets its answer before any idle close", "[store][server]") {
  // The answer comes just as the waiter's own idle time would be up: its idle time starts
  // with the answer, not with its last request (failed in full runs: the waiter was closed
  // right after its GET was answered, before it could read the reply).
  rdzv::StoreServerOptions options;
  options.idleTimeout = 300ms;
  ServerThread server(options);
  TcpStore waiter(server.clientOptions());
  TcpStore setter(server.clientOptions());
  std::thread later([&setter] {
    std::this_thread::sleep_for(280ms);
    setter.set("late", "1");
  });
  CHECK(waiter.get("late", 5s) == "1");
  later.join();
  CHECK(waiter.get("late", 5s) == "1");  // the waiter is still connected (well within 300 ms)
}

TEST_CASE("clearing a close notice while disconnected does not connect", "[store][server]") {
  ServerThread server;
  TcpStoreOptions options = server.clientOptions();
  options.connectTimeout = 300ms;
  TcpStore client(options);
  client.setCloseNotice("ended", "lost");
  server.stop();
  CHECK_THROWS_AS(client.ping(), Error);  // the client learns that its connection is gone
  auto start = std::chrono::steady_clock::now();
  CHECK_NOTHROW(client.setCloseNotice("", ""));  // nothing to clear: no connection, no retries
  CHECK(std::chrono::steady_clock::now() - start < 250ms);
  CHECK_THROWS_AS(client.setCloseNotice("ended", "lost"), Error);  // registering needs the store
}

TEST_CASE("a stopped server gives a waiting client a network error, not a hang", "[store][server]") {
  ServerThread server;
  TcpStore client(server.clientOptions());
  client.set("k", "v");
  std::atomic<bool> started{false};
  auto start = std::chrono::steady_clock::now();
  std::thread stopper([&] {
    while (!started) std::this_thread::sleep_for(1ms);
    std::this_thread::sleep_for(200ms);
    server.stop();
  });
  try {
    started = true;
    client.get("never", 60s);
    FAIL("get returned from a stopped server");
  } catch (const Error& error) {
    CHECK(error.code() == ErrorCode::Network);
    CHECK_THAT(error.what(), Catch::Contains("127.0.0.1:" + std::to_string(server.port())));
  }
  stopper.join();
  CHECK(std::chrono::steady_clock::now() - start < 10s);
}

TEST_CASE("connecting to nothing fails after the connect timeout with the endpoint named", "[store][server]") {
  int port;
  {
    ServerThread server;
    port = server.port();
  }  // stopped: nothing listens on the port now
  TcpStoreOptions options;
  options.port = port;
  options.connectTimeout = 500ms;
  auto start = std::chrono::steady_clock::now();
  try {
    TcpStore client(options);
    FAIL("connected to a closed port");
  } catch (const Error& error) {
    CHECK(error.code() == ErrorCode::Network);
    CHECK_THAT(error.what(), Catch::Contains("127.0.0.1:" + std::to_string(port)));
  }
  auto elapsed = std::chrono::steady_clock::now() - start;
  CHECK(elapsed >= 400ms);
  CHECK(elapsed < 5s);
}

TEST_CASE("malformed and oversized requests close only that connection", "[store][server]") {
  rdzv::StoreServerOptions options;
  options.limits.maxKeySize = 1024;
  options.limits.maxValueSize = 4096;
  ServerThread server(options);
  TcpStore healthy(server.clientOptions());
  healthy.set("before", "1");

  SECTION("an unknown command byte") {
    RawConnection bad(server.port());
    bad.send(encode(rdzv::Dialect::Torch2, rdzv::Command::Validate) + std::string("\x55garbage", 8));
    CHECK(bad.closedByServer());
  }
  SECTION("a key over the limit") {
    RawConnection bad(server.port());
    bad.send(encode(rdzv::Dialect::Torch2, rdzv::Command::Validate));
    bad.send(encode(rdzv::Dialect::Torch2, rdzv::Command::Set, {std::string(2048, 'k')}, {"v"}));
    CHECK(bad.closedByServer());
  }
  SECTION("a value length of 2^63") {
    RawConnection bad(server.port());
    std::string request = encode(rdzv::Dialect::Torch113, rdzv::Command::Set, {"k"}, {""});
    request.replace(request.size() - 8, 8, std::string("\0\0\0\0\0\0\0\x80", 8));
    bad.send(request);
    CHECK(bad.closedByServer());
  }
  SECTION("a 1.13 WATCH_KEY, which this server does not serve") {
    RawConnection bad(server.port());
    bad.send(std::string("\x07", 1) + std::string("\x01\0\0\0\0\0\0\0k", 9));
    CHECK(bad.closedByServer());
  }
  SECTION("ADD to a value that is not a number") {
    TcpStore client(server.clientOptions());
    client.set("text", "abc");
    try {
      client.add("text", 1);
      FAIL("ADD on text succeeded");
    } catch (const Error& error) {
      CHECK(error.code() == ErrorCode::Network);
    }
    CHECK(healthy.get("text", 5s) == "abc");
  }
  CHECK(healthy.get("before", 5s) == "1");
  healthy.set("after", "2");
  CHECK(healthy.get("after", 5s) == "2");
}

TEST_CASE("a client that sends half a request is dropped after the request timeout", "[store][server]") {
  rdzv::StoreServerOptions options;
  options.requestTimeout = 200ms;
  ServerThread server(options);
  RawConnection slow(server.port());
  std::string request = encode(rdzv::Dialect::Torch113, rdzv::Command::Set, {"key"}, {"value"});
  slow.send(request.substr(0, 5));
  auto start = std::chrono::steady_clock::now();
  CHECK(slow.closedByServer());
  auto elapsed = std::chrono::steady_clock::now() - start;
  CHECK(elapsed >= 150ms);
  CHECK(elapsed < 3s);
}

TEST_CASE("the connection limit refuses extra clients and serves the others", "[store][server]") {
  rdzv::StoreServerOptions options;
  options.maxConnections = 3;
  ServerThread server(options);
  std::vector<std::unique_ptr<TcpStore>> clients;
  for (int i = 0; i < 3; ++i) clients.push_back(std::make_unique<TcpStore>(server.clientOptions()));
  REQUIRE(eventually([&] { return server.connections() == 3; }));
  RawConnection extra(server.port());
  CHECK(extra.closedByServer());
  clients[2]->set("still", "served");
  CHECK(clients[0]->get("still", 5s) == "served");
}

TEST_CASE("with a shared secret, only clients that prove it are served", "[store][server][auth]") {
  rdzv::StoreServerOptions options;
  options.secret = "s3cret";
  ServerThread server(options);
  TcpStoreOptions right = server.clientOptions();
  right.secret = "s3cret";
  TcpStore trusted(right);
  trusted.set("k", "v");
  CHECK(trusted.get("k", 5s) == "v");

  TcpStoreOptions wrong = server.clientOptions();
  wrong.secret = "guess";
  try {
    TcpStore intruder(wrong);
    FAIL("a wrong secret was accepted");
  } catch (const Error& error) {
    CHECK(error.code() == ErrorCode::PermissionDenied);
  }

  // No secret at all (as every torch client): the first real request closes the connection.
  TcpStore anonymous(server.clientOptions());
  try {
    anonymous.get("k", 2s);
    FAIL("an unauthenticated client was served");
  } catch (const Error& error) {
    CHECK(error.code() == ErrorCode::Network);
  }
  // The secret never crosses the wire: only nonces and HMACs do (rendezvous/store/store_auth.h).
  CHECK(trusted.get("k", 5s) == "v");

  // A close notice is refused before authentication too, and so never fires.
  RawConnection raw(server.port());
  raw.send(encode(rdzv::Dialect::Torch2, rdzv::Command::OnCloseSet, {"/unauthenticated"}, {"x"}));
  CHECK(raw.closedByServer());  // the server has handled the close by then
  CHECK_FALSE(trusted.check({"unauthenticated"}));
}

TEST_CASE("a client with a secret refuses a store that cannot prove it, before sending anything",
          "[store][server][auth]") {
  rdzv::StoreServerOptions open;  // no secret: what a squatter or a torch store looks like
  ServerThread noSecret(open);
  rdzv::StoreServerOptions other;
  other.secret = "another job's sixteen-byte secret";
  ServerThread otherSecret(other);

  for (ServerThread* server : {&noSecret, &otherSecret}) {
    TcpStoreOptions options = server->clientOptions();
    options.secret = "this job's sixteen-byte secret";
    options.connectTimeout = 5s;
    try {
      TcpStore client(options);
      FAIL("a store without our secret was accepted");
    } catch (const Error& error) {
      CHECK(error.code() == ErrorCode::PermissionDenied);
      CHECK_THAT(error.what(), Catch::Contains("did not prove our shared secret") ||
                                   Catch::Contains("could not prove our shared secret"));
    }
  }
  // Nothing reached the impostors: a client that stops at the server's proof sends no
  // request at all.
  CHECK(TcpStore(noSecret.clientOptions()).numKeys() == 0);
  TcpStoreOptions otherOptions = otherSecret.clientOptions();
  otherOptions.secret = other.secret;
  CHECK(TcpStore(otherOptions).numKeys() == 0);
}

TEST_CASE("a store that serves one run refuses a client of another", "[store][server][auth]") {
  rdzv::StoreServerOptions options;
  options.secret = "the shared sixteen-byte secret";
  options.context = "run-a";
  ServerThread server(options);
  TcpStoreOptions mine = server.clientOptions();
  mine.secret = options.secret;
  mine.authContext = "run-a";
  TcpStore member(mine);
  member.set("k", "v");

  TcpStoreOptions theirs = mine;
  theirs.authContext = "run-b";
  try {
    TcpStore stranger(theirs);
    FAIL("a client of another run was accepted");
  } catch (const Error& error) {
    CHECK(error.code() == ErrorCode::PermissionDenied);
  }
  CHECK(member.get("k", 5s) == "v");
}

TEST_CASE("a proof seen on one connection is refused on another (both nonces bind it)", "[store][server][auth]") {
  rdzv::StoreServerOptions options;
  options.secret = "the shared sixteen-byte secret";
  ServerThread server(options);
  const std::string clientNonce(rdzv::kAuthNonceSize, 'c');
  const std::string hello = encode(rdzv::Dialect::Torch2, rdzv::Command::AuthHello, {"run"}, {clientNonce});

  // A legitimate handshake, as someone on the path would see it.
  RawConnection first(server.port());
  REQUIRE(first.send(hello));
  const std::string answer = first.receive(2 * rdzv::kAuthNonceSize);
  REQUIRE(answer.size() == 2 * rdzv::kAuthNonceSize);
  const rdzv::Handshake seen{clientNonce, answer.substr(0, rdzv::kAuthNonceSize), "run"};
  CHECK(
      rdzv::digestsEqual(rdzv::digestOf(answer.substr(rdzv::kAuthNonceSize)), rdzv::serverProof(options.secret, seen)));
  const rdzv::Digest proof = rdzv::clientProof(options.secret, seen);
  const std::string proofRequest =
      encode(rdzv::Dialect::Torch2, rdzv::Command::AuthProof, {}, {std::string(proof.begin(), proof.end())});
  REQUIRE(first.send(proofRequest));
  CHECK(first.receive(1) == std::string(1, static_cast<char>(rdzv::kAuthAccepted)));

  // The same hello and proof replayed on a new connection: the server's nonce is new, so
  // the old proof is wrong, and the connection is closed.
  RawConnection replay(server.port());
  REQUIRE(replay.send(hello));
  const std::string second = replay.receive(2 * rdzv::kAuthNonceSize);
  REQUIRE(second.size() == 2 * rdzv::kAuthNonceSize);
  CHECK(second.substr(0, rdzv::kAuthNonceSize) != seen.serverNonce);
  replay.send(proofRequest);
  CHECK(replay.closedByServer());
}

TEST_CASE("pltrun-store prints its port, serves, and stops on SIGTERM", "[store][server][executable]") {
  TempDir dir;
  ChildProcess store({PLTRUN_STORE_BINARY, "--port", "0"}, {}, dir / "out.txt");
  REQUIRE(eventually([&] { return readFile(dir / "out.txt").find('\n') != std::string::npos; }, 10s));
  std::string line = readFile(dir / "out.txt");
  REQUIRE(line.rfind("listening on 127.0.0.1:", 0) == 0);
  int port = std::stoi(line.substr(line.rfind(':') + 1));
  TcpStoreOptions options;
  options.port = port;
  TcpStore client(options);
  client.set("k", "v");
  CHECK(client.get("k", 5s) == "v");
  store.signal(SIGTERM);
  Finished finished = store.wait(10s);
  CHECK(finished.status == 0);
  CHECK_FALSE(finished.timedOut);
}

TEST_CASE("pltrun-store rejects bad flags and busy ports with one line", "[store][server][executable]") {
  ServerThread busy;
  for (auto args : std::vector<std::vector<std::string>>{
           {"--port", "99999"}, {"--max-connections", "0"}, {"--bogus"}, {"--port", std::to_string(busy.port())}}) {
    args.insert(args.begin(), PLTRUN_STORE_BINARY);
    ChildProcess store(args);
    Finished finished = store.wait(10s);
    INFO(args[1] << " -> " << finished.err);
    CHECK(finished.status != 0);
    CHECK(std::count(finished.err.begin(), finished.err.end(), '\n') == 1);
    CHECK(finished.err.rfind("pltrun-store: error:", 0) == 0);
  }
}

// Connection slots of the real pltrun-store cannot be taken from the clients that hold the
// secret: unauthenticated connections get a few seconds, at most half the slots, and the
// one that waited longest makes room; out of descriptors, new connections are closed at
// once with one log line instead of left hanging. Loopback, port 0.

#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <vector>

#include "helpers/child_process.h"
#include "helpers/secret_file_fixture.h"
#include "pltrun/error.h"
#include "pltrun/tcp_store.h"
#include "store/raw_connection.h"
#include "store/store_process.h"

using namespace pltrun;
using namespace pltrun::test;
using namespace std::chrono_literals;

namespace {

size_t countOf(const std::string& text, const std::string& what) {
  size_t count = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++count;
  return count;
}

}  // namespace

TEST_CASE("a connection that does not authenticate in time is closed", "[store][connections][auth]") {
  SecretFile secret;
  StoreProcess store({"--secret-file", secret.path(), "--auth-timeout", "0.5"});
  RawConnection silent(store.portNumber());
  const auto started = std::chrono::steady_clock::now();
  CHECK(silent.closedByServer());
  const auto waited = std::chrono::steady_clock::now() - started;
  CHECK(waited >= 400ms);
  CHECK(waited < 3s);
  CHECK_THAT(store.log(), Catch::Contains("did not authenticate within 500 ms"));
}

TEST_CASE("idle unauthenticated sockets cannot keep a client with the secret out", "[store][connections][auth]") {
  SecretFile secret;
  StoreProcess store({"--secret-file", secret.path(), "--max-connections", "20"});
  std::vector<std::unique_ptr<RawConnection>> squatters;
  for (int i = 0; i < 20; ++i) squatters.push_back(std::make_unique<RawConnection>(store.portNumber()));
  std::this_thread::sleep_for(100ms);  // all accepted
  const auto started = std::chrono::steady_clock::now();
  std::unique_ptr<TcpStore> client = storeClient(store.portNumber(), secret.secret());
  client->set("k", "v");
  CHECK(client->get("k", 1s) == "v");
  CHECK(std::chrono::steady_clock::now() - started < 1s);
  // The squatters that waited longest were closed to make room.
  CHECK_THAT(store.log(), Catch::Contains("waited longest"));
  CHECK(squatters.front()->closedByServer());
}

TEST_CASE("the connection limit follows the descriptors: past it, new connections are closed at once",
          "[store][connections]") {
  // 32 descriptors in all (soft and hard: pltrun-store raises its soft limit to the hard
  // one): half of them for connections, so the store never runs out of descriptors itself.
  StoreProcess store({}, {"/usr/bin/prlimit", "--nofile=32:32"});
  TcpStoreOptions options;
  options.port = store.portNumber();
  options.timeout = 2s;
  TcpStore first(options);
  first.set("before", "1");
  std::vector<std::unique_ptr<RawConnection>> flood;
  for (int i = 0; i < 60; ++i) flood.push_back(std::make_unique<RawConnection>(store.portNumber()));
  // The last ones found no room: closed at once rather than left in the backlog.
  const auto started = std::chrono::steady_clock::now();
  CHECK(flood.back()->closedByServer());
  CHECK(std::chrono::steady_clock::now() - started < 2s);
  CHECK(first.get("before", 1s) == "1");  // connections it had are still served
  flood.clear();
  std::this_thread::sleep_for(200ms);
  TcpStore later(options);  // with room again, new clients are served
  CHECK(later.get("before", 1s) == "1");
  const std::string log = store.log();
  INFO(log);
  CHECK(countOf(log, "16 connections is the limit") == 1);  // one line for the whole flood
  CHECK(countOf(log, "accept failed") == 0);
}

TEST_CASE("a flood of idle connections under a low descriptor limit cannot keep a client with the secret out",
          "[store][connections][auth][bounded]") {
  // Before: --max-connections (100000) decided alone, so 50000 connections could wait to
  // authenticate under a limit of 256 and "the oldest is closed" never came into play.
  SecretFile secret;
  StoreProcess store({"--secret-file", secret.path()}, {"/usr/bin/prlimit", "--nofile=256:256"});
  std::vector<std::unique_ptr<RawConnection>> flood;
  for (int i = 0; i < 400; ++i) flood.push_back(std::make_unique<RawConnection>(store.portNumber()));
  std::this_thread::sleep_for(300ms);
  const auto started = std::chrono::steady_clock::now();
  std::unique_ptr<TcpStore> client = storeClient(store.portNumber(), secret.secret());
  client->set("k", "v");
  CHECK(client->get("k", 1s) == "v");
  CHECK(std::chrono::steady_clock::now() - started < 2s);
  const std::string log = store.log();
  INFO(log);
  CHECK(countOf(log, "waited longest") >= 1);
  CHECK(countOf(log, "closing the connection") < 5);  // 300 evictions, a line per 10 s
  CHECK(countOf(log, "out of file descriptors") == 0);
}

TEST_CASE("pltrun-store takes its secret from PLTRUN_SECRET_FILE, and refuses a file others can read",
          "[store][connections][auth]") {
  SecretFile secret;
  StoreProcess store({}, {"/usr/bin/env", "PLTRUN_SECRET_FILE=" + secret.path()});
  CHECK_THROWS_AS(storeClient(store.portNumber())->numKeys(), Error);
  CHECK(storeClient(store.portNumber(), secret.secret())->numKeys() == 0);

  SecretFile readable("readable by every user of the machine", 0644);
  ChildProcess refused({PLTRUN_STORE_BINARY, "--port", "0", "--secret-file", readable.path()});
  Finished end = refused.wait(10s);
  INFO(end.err);
  CHECK(end.status == 2);
  CHECK(end.err == "pltrun-store: error: --secret-file: '" + readable.path() +
                       "' is readable or writable by other users (mode 0644): run chmod 600 '" + readable.path() +
                       "'\n");
}

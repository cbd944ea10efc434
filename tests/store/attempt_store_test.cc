// The workers' store of one attempt (lib/launcher/net/attempt_store.h) against real clients on
// loopback: every attempt gets an empty table behind a new listener, the last attempt's
// listener refuses new connections and its open connections are closed (a straggler that
// keeps its socket loses it), and ports never repeat within a run unless fixed.

#include "launcher/net/attempt_store.h"

#include <catch2/catch.hpp>
#include <set>

#include "pltrun/error.h"
#include "pltrun/tcp_store.h"

using namespace pltrun;
using namespace std::chrono_literals;

namespace {

std::unique_ptr<TcpStore> clientOf(int port) {
  TcpStoreOptions options;
  options.port = port;
  options.connectTimeout = 300ms;
  options.timeout = 2s;
  return std::make_unique<TcpStore>(options);
}

}  // namespace

TEST_CASE("each attempt's store is new: nothing of the last attempt can be read or written", "[attempt_store]") {
  AttemptStore stores(AttemptStore::Host::Launcher, "127.0.0.1");
  const int first = stores.openNext();
  REQUIRE(first > 0);
  std::unique_ptr<TcpStore> straggler = clientOf(first);
  straggler->set("peer_address", "attempt 0");
  CHECK(straggler->add("barrier", 1) == 1);

  const int second = stores.openNext();
  CHECK(second != first);
  CHECK(stores.port() == second);
  std::unique_ptr<TcpStore> worker = clientOf(second);
  CHECK_FALSE(worker->check({"peer_address"}));
  CHECK(worker->add("barrier", 1) == 1);  // counts from 0 again
  CHECK(worker->numKeys() == 1);

  // The old connection was closed with its attempt, and the old port takes no new one.
  CHECK_THROWS_AS(straggler->add("barrier", 1), Error);
  CHECK_THROWS_AS(clientOf(first), Error);
  CHECK_FALSE(worker->check({"peer_address"}));
}

TEST_CASE("ports never repeat within a run", "[attempt_store]") {
  AttemptStore stores(AttemptStore::Host::Launcher, "127.0.0.1");
  std::set<int> ports;
  for (int attempt = 0; attempt < 40; ++attempt) ports.insert(stores.openNext());
  CHECK(ports.size() == 40);
}

TEST_CASE("a fixed port is the same for every attempt, with an empty table each time", "[attempt_store]") {
  const int port = [] {
    AttemptStore probe(AttemptStore::Host::Launcher, "127.0.0.1");
    return probe.openNext();  // free a moment ago; closed again with `probe`
  }();
  AttemptStore stores(AttemptStore::Host::Launcher, "127.0.0.1", port);
  REQUIRE(stores.openNext() == port);
  clientOf(port)->set("key", "attempt 0");
  REQUIRE(stores.openNext() == port);
  CHECK_FALSE(clientOf(port)->check({"key"}));
}

TEST_CASE("close ends the current attempt's store, opening again works", "[attempt_store]") {
  AttemptStore stores(AttemptStore::Host::Launcher, "127.0.0.1");
  const int port = stores.openNext();
  std::unique_ptr<TcpStore> client = clientOf(port);
  client->set("key", "value");
  stores.close();
  CHECK(stores.port() == 0);
  CHECK_THROWS_AS(client->get("key", 1s), Error);
  CHECK(stores.openNext() != port);
}

TEST_CASE("an address that cannot be listened on is a clear error", "[attempt_store]") {
  AttemptStore stores(AttemptStore::Host::Launcher,
                      "192.0.2.1");  // TEST-NET-1: never an address of this machine; nothing is sent
  try {
    stores.openNext();
    FAIL("listening on 192.0.2.1 succeeded");
  } catch (const Error& error) {
    CHECK_THAT(error.what(), Catch::Contains("192.0.2.1"));
  }
}

TEST_CASE("for rank 0's worker only a port is chosen: free, never one an earlier attempt had", "[attempt_store]") {
  AttemptStore ports(AttemptStore::Host::RankZeroWorker, "127.0.0.1");
  CHECK_FALSE(ports.hostedHere());
  std::set<int> seen;
  for (int attempt = 0; attempt < 40; ++attempt) {
    const int port = ports.openNext();
    CHECK(ports.port() == 0);  // nothing listens here: torch's store in rank 0 will
    CHECK_THROWS_AS(clientOf(port), Error);
    seen.insert(port);
  }
  CHECK(seen.size() == 40);
  const int given = *seen.begin();  // as if given by --master-port
  AttemptStore fixed(AttemptStore::Host::RankZeroWorker, "127.0.0.1", given);
  CHECK(fixed.openNext() == given);  // the same for every attempt, bound by nobody here
  CHECK(fixed.openNext() == given);
}

// One conformance suite for every Store: the in-memory store, the prefix decorator, Store's
// default composite operations over primitives alone (store/primitive_store.h), the TCP
// client against pltrun's server in both dialects and with a shared secret, and the TCP
// client against PyTorch's own TCPStore server. etcd_tests compiles this file again with
// STORE_FIXTURES naming etcd/etcd_store_fixture.h and STORES = EtcdFixture (real etcd).

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <functional>
#include <numeric>
#include <thread>

#include "pltrun/error.h"
#ifdef STORE_FIXTURES
#include STORE_FIXTURES
#else
#include "store/store_fixtures.h"
#endif

using namespace pltrun;
using namespace pltrun::test;
using namespace std::chrono_literals;

namespace {

// A fresh key per use, so suites sharing one server (torch's) never see each other's keys.
std::string uniqueKey(const std::string& stem) {
  static std::atomic<int> counter{0};
  return stem + "-" + std::to_string(counter++);
}

// Ends the client `owner` and returns once the store has handled its going: the ephemeral
// `marker` it set vanishes in the same step that applies its close notice.
void closeAndSettle(std::unique_ptr<Store>& owner, Store& watcher, const std::string& marker) {
  owner.reset();
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (watcher.check({marker}) && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(2ms);
  REQUIRE_FALSE(watcher.check({marker}));
}

// Runs `each(client, index)` on `count` clients of the fixture's store at once, a thread
// each, and returns once all have finished.
template <typename Fixture>
void onClientsAtOnce(Fixture& fixture, int count, const std::function<void(Store&, int)>& each) {
  std::vector<std::unique_ptr<Store>> clients;
  for (int i = 0; i < count; ++i) clients.push_back(fixture.client());
  std::vector<std::thread> threads;
  for (int i = 0; i < count; ++i) threads.emplace_back([&, i] { each(*clients[i], i); });
  for (auto& thread : threads) thread.join();
}

ErrorCode errorCodeOf(const std::function<void()>& action) {
  try {
    action();
  } catch (const Error& error) {
    return error.code();
  }
  FAIL("expected pltrun::Error");
  return ErrorCode::System;
}

}  // namespace

#ifndef STORES
#define STORES                                                                                                       \
  InMemoryFixture, PrefixFixture, PrimitivesOnlyFixture, TcpTorch2Fixture, TcpTorch113Fixture, TcpWithSecretFixture, \
      TorchServerFixture
#endif

TEMPLATE_TEST_CASE("set and get round-trip any bytes", "[store][conformance]", STORES) {
  TestType fixture;
  auto store = fixture.client();
  const std::string key = uniqueKey("bytes");
  const std::string binary("\0\x01\xff zero\0inside", 16);
  store->set(key, binary);
  CHECK(store->get(key, 5s) == binary);
  store->set(key, "");
  CHECK(store->get(key, 5s).empty());
  store->set(key, "replaced");
  CHECK(store->get(key, 5s) == "replaced");
  auto other = fixture.client();
  CHECK(other->get(key, 5s) == "replaced");
}

TEMPLATE_TEST_CASE("get waits for a key another client sets later", "[store][conformance]", STORES) {
  TestType fixture;
  auto reader = fixture.client();
  auto writer = fixture.client();
  const std::string key = uniqueKey("later");
  std::thread setter([&] {
    std::this_thread::sleep_for(100ms);
    writer->set(key, "arrived");
  });
  CHECK(reader->get(key, 10s) == "arrived");
  setter.join();
}

TEMPLATE_TEST_CASE("get and wait time out within bounds and name the keys", "[store][conformance]", STORES) {
  TestType fixture;
  auto store = fixture.client();
  const std::string key = uniqueKey("never");
  auto start = std::chrono::steady_clock::now();
  try {
    store->get(key, 300ms);
    FAIL("get of a missing key returned");
  } catch (const Error& error) {
    CHECK(error.code() == ErrorCode::Timeout);
    CHECK_THAT(error.what(), Catch::Contains(key));
  }
  auto elapsed = std::chrono::steady_clock::now() - start;
  CHECK(elapsed >= 300ms);
  CHECK(elapsed < 3s);
  // The client still works after a timed-out wait.
  store->set(key, "now");
  CHECK(store->get(key, 5s) == "now");
  CHECK(errorCodeOf([&] { store->wait({key, uniqueKey("absent")}, 100ms); }) == ErrorCode::Timeout);
}

TEMPLATE_TEST_CASE("waitAny returns the key that exists or wakes when another client sets one", "[store][conformance]",
                   STORES) {
  TestType fixture;
  auto waiter = fixture.client();
  auto writer = fixture.client();
  const std::string first = uniqueKey("any-a"), second = uniqueKey("any-b"), third = uniqueKey("any-c");
  writer->set(third, "there");
  int calls = 0;
  CHECK(waiter->waitAny({first, second, third}, 5s, 50ms, [&] { ++calls; }) == 2);
  CHECK(waiter->waitAny({first, third, second}, 0ms, 50ms, [&] { ++calls; }) == 1);  // a look
  CHECK(calls == 0);                                                                 // nothing to wait for
  CHECK(errorCodeOf([&] { waiter->waitAny({first, second}, 0ms, 50ms, {}); }) == ErrorCode::Timeout);

  const std::string late = uniqueKey("any-late");
  std::thread setter([&] {
    std::this_thread::sleep_for(300ms);
    writer->set(late, "arrived");
  });
  CHECK(waiter->waitAny({first, late, second}, 10s, 50ms, [&] { ++calls; }) == 1);
  setter.join();
  CHECK(calls >= 1);  // it ran between slices while it waited
}

TEMPLATE_TEST_CASE("waitAny times out naming the keys, and a throwing callback abandons it", "[store][conformance]",
                   STORES) {
  TestType fixture;
  auto store = fixture.client();
  const std::string key = uniqueKey("any-never"), other = uniqueKey("any-never-either");
  auto start = std::chrono::steady_clock::now();
  try {
    store->waitAny({key, other}, 300ms, 100ms, {});
    FAIL("waitAny of missing keys returned");
  } catch (const Error& error) {
    CHECK(error.code() == ErrorCode::Timeout);
    CHECK_THAT(error.what(), Catch::Contains(key));
  }
  CHECK(std::chrono::steady_clock::now() - start >= 300ms);

  struct Abandoned {};
  int calls = 0;
  start = std::chrono::steady_clock::now();
  CHECK_THROWS_AS(store->waitAny({key, other}, 60s, 50ms,
                                 [&] {
                                   if (++calls == 3) throw Abandoned{};
                                 }),
                  Abandoned);
  CHECK(std::chrono::steady_clock::now() - start < 10s);
  // The client still works after an abandoned wait.
  store->set(other, "now");
  CHECK(store->waitAny({key, other}, 5s, 50ms, {}) == 1);
  CHECK(store->get(other, 5s) == "now");
}

TEMPLATE_TEST_CASE("add counts from zero and stores decimal text", "[store][conformance]", STORES) {
  TestType fixture;
  auto store = fixture.client();
  const std::string key = uniqueKey("counter");
  CHECK(store->add(key, 5) == 5);
  CHECK(store->add(key, 2) == 7);
  CHECK(store->add(key, -10) == -3);
  CHECK(store->get(key, 5s) == "-3");
  store->set(key, "40");
  CHECK(store->add(key, 2) == 42);
}

TEMPLATE_TEST_CASE("compareSet follows torch's semantics", "[store][conformance]", STORES) {
  TestType fixture;
  auto store = fixture.client();
  const std::string key = uniqueKey("cas");
  // A missing key with a non-empty expected value: nothing is set, `expected` comes back.
  CHECK(store->compareSet(key, "x", "y") == "x");
  CHECK_FALSE(store->check({key}));
  // A missing key with an empty expected value is created.
  CHECK(store->compareSet(key, "", "first") == "first");
  // Mismatch: unchanged, the current value comes back.
  CHECK(store->compareSet(key, "wrong", "second") == "first");
  // Match: replaced.
  CHECK(store->compareSet(key, "first", "second") == "second");
  CHECK(store->get(key, 5s) == "second");
}

TEMPLATE_TEST_CASE("check, deleteKey and numKeys", "[store][conformance]", STORES) {
  TestType fixture;
  auto store = fixture.client();
  const std::string a = uniqueKey("a"), b = uniqueKey("b");
  const std::int64_t before = store->numKeys();
  store->set(a, "1");
  CHECK(store->check({a}));
  CHECK_FALSE(store->check({a, b}));
  store->set(b, "2");
  CHECK(store->check({a, b}));
  CHECK(store->numKeys() == before + 2);
  CHECK(store->deleteKey(a));
  CHECK_FALSE(store->deleteKey(a));
  CHECK_FALSE(store->check({a}));
  CHECK(store->numKeys() == before + 1);
}

TEMPLATE_TEST_CASE("append creates and extends", "[store][conformance]", STORES) {
  TestType fixture;
  auto store = fixture.client();
  const std::string key = uniqueKey("log");
  store->append(key, "a");
  store->append(key, "bc");
  CHECK(store->get(key, 5s) == "abc");
  // Bytes equal to the value there are appended too (a compare-and-set from the empty
  // value would take the value found for its own write).
  const std::string twice = uniqueKey("twice");
  store->set(twice, "ab");
  store->append(twice, "ab");
  CHECK(store->get(twice, 5s) == "abab");
  // Nothing appended to a missing key creates it, empty.
  const std::string empty = uniqueKey("empty");
  store->append(empty, "");
  CHECK(store->get(empty, 5s).empty());
}

TEMPLATE_TEST_CASE("many clients appending at once lose no append", "[store][conformance]", STORES) {
  TestType fixture;
  const std::string key = uniqueKey("journal");
  constexpr int kClients = 4, kAppends = 20;
  onClientsAtOnce(fixture, kClients, [&](Store& client, int i) {
    for (int entry = 0; entry < kAppends; ++entry) client.append(key, std::to_string(i * 100 + entry) + ";");
  });
  std::vector<std::string> entries;
  const std::string journal = fixture.client()->get(key, 5s);
  for (std::size_t at = 0, end; (end = journal.find(';', at)) != std::string::npos; at = end + 1) {
    entries.push_back(journal.substr(at, end - at));
  }
  std::vector<std::string> expected;
  for (int i = 0; i < kClients; ++i) {
    for (int entry = 0; entry < kAppends; ++entry) expected.push_back(std::to_string(i * 100 + entry));
  }
  std::sort(entries.begin(), entries.end());
  std::sort(expected.begin(), expected.end());
  CHECK(entries == expected);  // every entry once: none lost, none written twice
}

TEMPLATE_TEST_CASE("multiSet and multiGet", "[store][conformance]", STORES) {
  TestType fixture;
  auto store = fixture.client();
  const std::vector<std::string> keys = {uniqueKey("m"), uniqueKey("m"), uniqueKey("m")};
  store->multiSet(keys, {"one", "", "three"});
  CHECK(store->multiGet(keys, 5s) == std::vector<std::string>{"one", "", "three"});
  CHECK(errorCodeOf([&] { store->multiSet(keys, {"too few"}); }) == ErrorCode::InvalidArgument);
}

TEMPLATE_TEST_CASE("multiGet waits for every key, and times out within bounds naming a missing one",
                   "[store][conformance]", STORES) {
  TestType fixture;
  auto reader = fixture.client();
  auto writer = fixture.client();
  const std::string there = uniqueKey("mg-there"), later = uniqueKey("mg-later"), never = uniqueKey("mg-never");
  writer->set(there, "1");
  std::thread setter([&] {
    std::this_thread::sleep_for(100ms);
    writer->set(later, "2");
  });
  CHECK(reader->multiGet({there, later}, 10s) == std::vector<std::string>{"1", "2"});
  setter.join();

  const auto start = std::chrono::steady_clock::now();
  try {
    reader->multiGet({there, never}, 300ms);
    FAIL("multiGet of a missing key returned");
  } catch (const Error& error) {
    CHECK(error.code() == ErrorCode::Timeout);
    CHECK_THAT(error.what(), Catch::Contains(never));
  }
  const auto elapsed = std::chrono::steady_clock::now() - start;
  CHECK(elapsed >= 300ms);
  CHECK(elapsed < 3s);
  // The client still works after a timed-out multiGet.
  writer->set(never, "3");
  CHECK(reader->multiGet({never, there}, 5s) == std::vector<std::string>{"3", "1"});
}

TEMPLATE_TEST_CASE("many clients adding at once lose no update", "[store][conformance]", STORES) {
  TestType fixture;
  const std::string key = uniqueKey("shared");
  constexpr int kClients = 8, kAdds = 50;
  onClientsAtOnce(fixture, kClients, [&](Store& client, int) {
    for (int i = 0; i < kAdds; ++i) client.add(key, 1);
  });
  CHECK(fixture.client()->add(key, 0) == kClients * kAdds);
}

TEMPLATE_TEST_CASE("increment numbers the clients that take a number at once, 1 to N", "[store][conformance]", STORES) {
  TestType fixture;
  const std::string key = uniqueKey("slots");
  constexpr int kClients = 8, kTakes = 25;
  std::vector<std::vector<std::int64_t>> taken(kClients);
  onClientsAtOnce(fixture, kClients, [&](Store& client, int i) {
    for (int take = 0; take < kTakes; ++take) taken[i].push_back(client.increment(key));
  });
  std::vector<std::int64_t> all;
  for (const auto& some : taken) all.insert(all.end(), some.begin(), some.end());
  std::sort(all.begin(), all.end());
  std::vector<std::int64_t> expected(kClients * kTakes);
  std::iota(expected.begin(), expected.end(), 1);
  CHECK(all == expected);  // every number once: none lost, none given twice
  // The counter reads back as any counter does.
  auto reader = fixture.client();
  CHECK(reader->add(key, 0) == kClients * kTakes);
  CHECK(reader->get(key, 5s) == std::to_string(kClients * kTakes));
  CHECK(reader->multiGet({key}, 5s) == std::vector<std::string>{std::to_string(kClients * kTakes)});
  CHECK(reader->compareSet(key, "7", "x") == std::to_string(kClients * kTakes));
}

TEMPLATE_TEST_CASE("increment and add count on one counter together", "[store][conformance]", STORES) {
  TestType fixture;
  auto store = fixture.client();
  const std::string key = uniqueKey("mixed");
  CHECK(store->increment(key) == 1);
  CHECK(store->increment(key) == 2);
  CHECK(store->add(key, 3) == 5);
  CHECK(store->increment(key) == 6);
  CHECK(store->get(key, 5s) == "6");
  CHECK(store->deleteKey(key));
  CHECK(store->increment(key) == 1);  // a counter deleted starts again
}

TEMPLATE_TEST_CASE("ephemeral keys vanish when their client goes", "[store][conformance]", STORES) {
  TestType fixture;
  if (!TestType::kExtensions) return;  // torch's server has no such keys: nothing to check
  auto watcher = fixture.client();
  const std::string key = uniqueKey("alive");
  {
    auto owner = fixture.client();
    owner->setEphemeral(key, "agent 3");
    CHECK(watcher->get(key, 5s) == "agent 3");
  }
  // The owner's connection is closed: the key goes within a bounded time.
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (watcher->check({key}) && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(5ms);
  CHECK_FALSE(watcher->check({key}));
}

// Close notices: the store sets a key when its client goes (pltrun's extension).

TEMPLATE_TEST_CASE("a close notice wakes a waiting client when its owner goes", "[store][conformance]", STORES) {
  TestType fixture;
  if (!TestType::kExtensions) return;  // torch's server has no close notices: nothing to check
  auto watcher = fixture.client();
  auto owner = fixture.client();
  const std::string key = uniqueKey("round-ended"), marker = uniqueKey("marker");
  const std::string notice = R"({"reason":"node_lost","node":3})";
  owner->setCloseNotice(key, notice);
  owner->setEphemeral(marker, "");
  CHECK(watcher->get(marker, 5s).empty());  // the owner's requests so far have been served...
  CHECK_FALSE(watcher->check({key}));       // ... and the notice waits for the owner to go

  std::thread closer([&] {
    std::this_thread::sleep_for(100ms);  // the watcher's wait is under way by then
    owner.reset();
  });
  auto start = std::chrono::steady_clock::now();
  std::string value;
  CHECK_NOTHROW(value = watcher->get(key, 10s));
  auto elapsed = std::chrono::steady_clock::now() - start;
  closer.join();
  CHECK(value == notice);
  CHECK(elapsed < 5s);
  // A plain key from now on: another client sees it, and it outlives everyone.
  auto other = fixture.client();
  CHECK(other->get(key, 5s) == notice);
}

TEMPLATE_TEST_CASE("a close notice does not overwrite an existing key", "[store][conformance]", STORES) {
  TestType fixture;
  if (!TestType::kExtensions) return;
  auto watcher = fixture.client();
  auto owner = fixture.client();
  const std::string key = uniqueKey("exists"), marker = uniqueKey("marker");
  watcher->set(key, "round completed");
  owner->setCloseNotice(key, "node_lost");
  owner->setEphemeral(marker, "");
  CHECK(watcher->get(marker, 5s).empty());
  closeAndSettle(owner, *watcher, marker);
  CHECK(watcher->get(key, 5s) == "round completed");
}

TEMPLATE_TEST_CASE("a key set by any client before the owner goes wins over its close notice", "[store][conformance]",
                   STORES) {
  TestType fixture;
  if (!TestType::kExtensions) return;
  auto watcher = fixture.client();
  auto owner = fixture.client();
  auto writer = fixture.client();
  const std::string key = uniqueKey("written"), own = uniqueKey("own"), marker = uniqueKey("marker");
  owner->setCloseNotice(key, "node_lost");
  writer->set(key, "written by another client");
  CHECK(writer->get(key, 5s) == "written by another client");  // served before the owner goes
  owner->setEphemeral(marker, "");
  CHECK(watcher->get(marker, 5s).empty());
  closeAndSettle(owner, *watcher, marker);
  CHECK(watcher->get(key, 5s) == "written by another client");

  // The owner writing the key itself counts too.
  auto second = fixture.client();
  second->setCloseNotice(own, "node_lost");
  second->set(own, "written by the owner");
  second->setEphemeral(marker, "");
  CHECK(watcher->get(marker, 5s).empty());
  closeAndSettle(second, *watcher, marker);
  CHECK(watcher->get(own, 5s) == "written by the owner");
}

TEMPLATE_TEST_CASE("a replaced close notice fires only the latest", "[store][conformance]", STORES) {
  TestType fixture;
  if (!TestType::kExtensions) return;
  auto watcher = fixture.client();
  auto owner = fixture.client();
  const std::string first = uniqueKey("first"), second = uniqueKey("second"), marker = uniqueKey("marker");
  owner->setCloseNotice(first, "1");
  owner->setCloseNotice(second, "2");
  owner->setEphemeral(marker, "");
  CHECK(watcher->get(marker, 5s).empty());
  closeAndSettle(owner, *watcher, marker);
  CHECK(watcher->get(second, 5s) == "2");
  CHECK_FALSE(watcher->check({first}));
}

TEMPLATE_TEST_CASE("a cleared close notice (empty key) fires nothing", "[store][conformance]", STORES) {
  TestType fixture;
  if (!TestType::kExtensions) return;
  auto watcher = fixture.client();
  auto owner = fixture.client();
  const std::string key = uniqueKey("cleared"), marker = uniqueKey("marker");
  const std::int64_t before = watcher->numKeys();
  owner->setCloseNotice(key, "node_lost");
  owner->setCloseNotice("", "");
  owner->setEphemeral(marker, "");
  CHECK(watcher->get(marker, 5s).empty());
  closeAndSettle(owner, *watcher, marker);
  CHECK_FALSE(watcher->check({key}));
  CHECK(watcher->numKeys() == before);  // nothing else was set either (no key "" or "/")
}

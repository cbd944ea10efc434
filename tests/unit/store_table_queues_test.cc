// StoreTable's queues, as torch's libuv server keeps them (TCPStoreLibUvBackend.cpp
// queuePush / queuePop / queueLen): first in, first out; a pop reports the length before
// it; WAIT (the first half of a blocking pop) counts an item, and each push wakes one
// waiter; under the same limits as keys.

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "rendezvous/store/store_costs.h"
#include "rendezvous/store/store_table.h"

namespace cost = pltrun::rdzv::cost;
using pltrun::rdzv::StoreTable;
using pltrun::rdzv::TableFull;
using pltrun::rdzv::TableLimits;

TEST_CASE("a queue gives its items back in the order they were pushed", "[store_table][queues]") {
  StoreTable table;
  CHECK(table.queueLength("q") == 0);
  table.queuePush("q", "first");
  table.queuePush("q", "");
  table.queuePush("q", std::string("\0bin", 4));
  CHECK(table.queueLength("q") == 3);
  StoreTable::Popped popped = table.queuePop("q");
  CHECK(popped.lengthBefore == 3);
  CHECK(popped.value == "first");
  CHECK(table.queuePop("q").value.empty());
  CHECK(table.queuePop("q").value == std::string("\0bin", 4));
  popped = table.queuePop("q");
  CHECK(popped.lengthBefore == 0);
  CHECK(popped.value.empty());
  CHECK(table.queueLength("q") == 0);
}

TEST_CASE("queues are apart from keys: GET, GETNUMKEYS and DELETE_KEY do not see them", "[store_table][queues]") {
  StoreTable table;
  table.queuePush("q", "item");
  CHECK_FALSE(table.contains("q"));
  CHECK(table.size() == 0);
  CHECK(table.erase("q") == 0);
  CHECK(table.queueLength("q") == 1);
  table.set("q", "value");  // a key of the same name is another thing
  CHECK(table.queuePop("q").value == "item");
  CHECK(table.get("q") == "value");
}

TEST_CASE("readyAll counts a queue that holds an item, as CHECK and WAIT do", "[store_table][queues]") {
  StoreTable table;
  table.set("k", "1");
  CHECK_FALSE(table.readyAll({"k", "q"}));
  table.queuePush("q", "x");
  CHECK(table.readyAll({"k", "q"}));
  CHECK_FALSE(table.containsAll({"k", "q"}));  // GET still needs a value
  table.queuePop("q");
  CHECK_FALSE(table.readyAll({"q"}));
}

TEST_CASE("each pushed item wakes one queue waiter, the longest waiting", "[store_table][queues]") {
  StoreTable table;
  std::vector<int> woken;
  const auto first = table.addWaiter(
      {"q"}, [&] { woken.push_back(1); }, true);
  const auto second = table.addWaiter(
      {"q"}, [&] { woken.push_back(2); }, true);
  REQUIRE(first != 0);
  REQUIRE(second != 0);
  table.queuePush("q", "a");
  CHECK(woken == std::vector<int>{1});
  table.queuePush("q", "b");
  CHECK(woken == std::vector<int>{1, 2});
  table.queuePush("q", "c");  // nobody left to wake
  CHECK(woken.size() == 2);
  CHECK(table.waiterCount() == 0);
  // With items queued, a queue waiter is ready at once; a key waiter is not.
  CHECK(table.addWaiter(
            {"q"}, [] {}, true) == 0);
  CHECK(table.addWaiter({"q"}, [] {}) != 0);
}

TEST_CASE("a push skips waiters on keys and cancelled ones, and a SET of that name wakes them all",
          "[store_table][queues]") {
  StoreTable table;
  std::vector<int> woken;
  table.addWaiter({"q"}, [&] { woken.push_back(1); });  // a GET: needs a value, not an item
  const auto cancelled = table.addWaiter(
      {"q"}, [&] { woken.push_back(2); }, true);
  table.addWaiter(
      {"q"}, [&] { woken.push_back(3); }, true);
  table.addWaiter(
      {"q"}, [&] { woken.push_back(4); }, true);
  table.cancelWaiter(cancelled);
  table.queuePush("q", "a");
  CHECK(woken == std::vector<int>{3});
  table.set("q", "v");
  CHECK(woken == std::vector<int>{3, 1, 4});
}

TEST_CASE("a waiter on a queue and a key fires when both are there, the item not used up before",
          "[store_table][queues]") {
  StoreTable table;
  std::vector<int> woken;
  table.addWaiter(
      {"q", "k"}, [&] { woken.push_back(1); }, true);
  table.addWaiter(
      {"q"}, [&] { woken.push_back(2); }, true);
  table.queuePush("q", "a");  // the first still misses k: the item wakes the second
  CHECK(woken == std::vector<int>{2});
  table.set("k", "1");
  CHECK(woken == std::vector<int>{2, 1});
}

TEST_CASE("a wakeup run by a push may pop and push again", "[store_table][queues]") {
  StoreTable table;
  std::string got;
  table.addWaiter(
      {"q"},
      [&] {
        got = table.queuePop("q").value;
        table.queuePush("r", got + "!");
      },
      true);
  table.queuePush("q", "ping");
  CHECK(got == "ping");
  CHECK(table.queuePop("r").value == "ping!");
}

TEST_CASE("queue items count against the table's limits, as keys, and give their charge back",
          "[store_table][queues]") {
  TableLimits limits;
  limits.maxValueSize = 8;
  limits.maxKeys = 4;
  StoreTable table(limits);
  table.queuePush("q", "123");
  table.queuePush("q", "45");
  CHECK(table.bytes() == cost::kQueue + 1 + 2 * cost::kQueueItem + 5);
  CHECK(table.itemsHeld() == 2);
  CHECK_THROWS_AS(table.queuePush("q", "123456789"), TableFull);  // over maxValueSize
  table.set("k", "v");                                            // a third
  table.queuePush("q", "");                                       // an empty item is one all the same
  CHECK_THROWS_AS(table.queuePush("q", ""), TableFull);           // a fifth
  CHECK_THROWS_AS(table.queuePush("r", "1"), TableFull);
  CHECK_THROWS_AS(table.set("l", "1"), TableFull);
  CHECK(table.queueLength("q") == 3);
  CHECK(table.bytes() == table.recountBytes());
  while (table.queuePop("q").lengthBefore > 0) {
  }
  CHECK(table.bytes() == cost::kKey + 2);  // only k's
  table.queuePush("r", "1");               // popped items no longer count
  CHECK(table.queueLength("r") == 1);
}

TEST_CASE("a flood of empty queue items stops at the byte limit, each charged its real cost", "[store_table][queues]") {
  TableLimits limits;
  limits.maxBytes = 1 << 20;
  StoreTable table(limits);
  std::uint64_t pushed = 0;
  try {
    for (; pushed < 10'000'000; ++pushed) table.queuePush("q", "");
  } catch (const TableFull& full) {
    CHECK_THAT(full.what(), Catch::Contains("past its limit of 1048576 bytes"));
  }
  // Not the 6 million a zero charge let in (about 32 bytes each, really).
  CHECK(pushed == (limits.maxBytes - cost::kQueue - 1) / cost::kQueueItem);
  CHECK(table.bytes() <= limits.maxBytes);
  CHECK(table.queueLength("q") == static_cast<std::int64_t>(pushed));
}

TEST_CASE("an item promised to a connection's WAIT is for its pop alone", "[store_table][queues]") {
  StoreTable table;
  table.queuePush("q", "only");
  table.promiseQueueItems(1, {"q"});
  CHECK_FALSE(table.readyAll({"q"}));  // a second blocked pop does not count it
  CHECK(table.queueLength("q") == 1);  // it is still in the queue
  StoreTable::Popped other = table.queuePop("q", 2);
  CHECK(other.lengthBefore == 0);
  StoreTable::Popped mine = table.queuePop("q", 1);
  CHECK(mine.lengthBefore == 1);
  CHECK(mine.value == "only");
}

TEST_CASE("a promise ends with the connection's next request or its close, and wakes a waiter",
          "[store_table][queues]") {
  StoreTable table;
  table.queuePush("q", "item");
  table.promiseQueueItems(1, {"q"});
  int woken = 0;
  REQUIRE(table.addWaiter(
              {"q"}, [&] { ++woken; }, true) != 0);
  SECTION("its next request was not the pop") { table.endPromises(1); }
  SECTION("its connection closed") { table.dropOwner(1); }
  SECTION("it popped another queue") { CHECK(table.queuePop("other", 1).lengthBefore == 0); }
  CHECK(woken == 1);
  CHECK(table.readyAll({"q"}));
}

TEST_CASE("a promise is only for keys that were ready through their queue", "[store_table][queues]") {
  StoreTable table;
  table.set("k", "1");
  table.queuePush("k", "item");  // a key of that name makes the WAIT ready by itself
  table.promiseQueueItems(1, {"k"});
  CHECK(table.queuePop("k", 2).value == "item");
  table.promiseQueueItems(1, {"empty"});  // nothing there: nothing promised
  table.queuePush("empty", "x");
  CHECK(table.readyAll({"empty"}));
}

TEST_CASE("a woken WAIT that gave up passes its item to the next waiter", "[store_table][queues]") {
  StoreTable table;
  std::vector<int> woken;
  table.addWaiter(
      {"q"}, [&] { woken.push_back(1); }, true);
  table.addWaiter(
      {"q"}, [&] { woken.push_back(2); }, true);
  table.queuePush("q", "item");
  CHECK(woken == std::vector<int>{1});
  table.passOnQueueItems({"q"});  // the first cancelled before it was answered
  CHECK(woken == std::vector<int>{1, 2});
  table.passOnQueueItems({"q"});  // nobody left: nothing happens
  CHECK(woken.size() == 2);
}

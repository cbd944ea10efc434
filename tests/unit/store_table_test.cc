// StoreTable: torch's SET / COMPARE_SET / ADD / APPEND / DELETE_KEY semantics, waiters woken
// exactly once when their last key appears, ephemeral keys owned by a connection, and a
// connection's close notice.
// torch's semantics as docs/TCPSTORE_PROTOCOL.md describes them: COMPARE_SET §5.1, ADD §5.2,
// DELETE_KEY §5.4, APPEND §5.5, WAIT §4.1.

#include "rendezvous/store/store_table.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "rendezvous/store/store_costs.h"

using pltrun::printableKey;
using pltrun::rdzv::StoreTable;
using pltrun::rdzv::TableFull;
using pltrun::rdzv::TableLimits;
namespace cost = pltrun::rdzv::cost;

namespace {

// What a plain (not ephemeral) key of `keySize` and `valueSize` bytes is charged.
std::uint64_t keyCost(std::uint64_t keySize, std::uint64_t valueSize) { return cost::kKey + keySize + valueSize; }

// A wakeup that counts how often it ran.
struct Counter {
  int calls = 0;
  StoreTable::Wakeup wakeup() {
    return [this] { ++calls; };
  }
};

}  // namespace

// ---------------------------------------------------------------------------------------
// Values

TEST_CASE("set stores a value and overwrites an existing one", "[store_table]") {
  StoreTable table;
  CHECK(table.size() == 0);
  CHECK_FALSE(table.get("k").has_value());
  CHECK_FALSE(table.contains("k"));

  table.set("k", "v1");
  CHECK(table.get("k") == std::optional<std::string>("v1"));
  CHECK(table.contains("k"));
  CHECK(table.size() == 1);

  table.set("k", "v2");
  CHECK(table.get("k") == std::optional<std::string>("v2"));
  CHECK(table.size() == 1);

  table.set("other", "x");
  CHECK(table.size() == 2);
  CHECK(table.get("k") == std::optional<std::string>("v2"));
}

TEST_CASE("set keeps binary keys and values, and an empty value is a value", "[store_table]") {
  StoreTable table;
  const std::string key("a\0b", 3);
  const std::string value("\0\xff\0", 3);
  table.set(key, value);
  CHECK(table.get(key) == std::optional<std::string>(value));
  CHECK_FALSE(table.get("a").has_value());  // the NUL is part of the key

  table.set("empty", "");
  REQUIRE(table.get("empty").has_value());
  CHECK(table.get("empty")->empty());
  CHECK(table.contains("empty"));
}

TEST_CASE("compareSet on a missing key with an empty expected value creates it", "[store_table]") {
  StoreTable table;
  CHECK(table.compareSet("k", "", "desired") == "desired");
  CHECK(table.get("k") == std::optional<std::string>("desired"));
  CHECK(table.size() == 1);
}

TEST_CASE("compareSet on a missing key with a non-empty expected value creates nothing", "[store_table]") {
  StoreTable table;
  CHECK(table.compareSet("k", "expected", "desired") == "expected");
  CHECK_FALSE(table.contains("k"));
  CHECK(table.size() == 0);
}

TEST_CASE("compareSet replaces a value equal to the expected one", "[store_table]") {
  StoreTable table;
  table.set("k", "old");
  CHECK(table.compareSet("k", "old", "new") == "new");
  CHECK(table.get("k") == std::optional<std::string>("new"));
  CHECK(table.size() == 1);
}

TEST_CASE("compareSet leaves a different value and returns it", "[store_table]") {
  StoreTable table;
  table.set("k", "current");
  CHECK(table.compareSet("k", "other", "new") == "current");
  CHECK(table.get("k") == std::optional<std::string>("current"));

  // An existing empty value does not match a non-empty expected, and an existing value
  // does not match an empty expected (empty only means "missing" for a missing key).
  table.set("e", "");
  CHECK(table.compareSet("e", "x", "new") == "");
  CHECK(table.get("e") == std::optional<std::string>(""));
  CHECK(table.compareSet("k", "", "new") == "current");
  CHECK(table.get("k") == std::optional<std::string>("current"));
}

TEST_CASE("compareSet with an empty expected value replaces an existing empty value", "[store_table]") {
  // TCPSTORE_PROTOCOL.md §5.1: on an existing key an empty expected is an ordinary comparison.
  StoreTable table;
  table.set("e", "");
  CHECK(table.compareSet("e", "", "filled") == "filled");
  CHECK(table.get("e") == std::optional<std::string>("filled"));
}

TEST_CASE("add counts from zero for a missing key and stores decimal text", "[store_table]") {
  StoreTable table;
  CHECK(table.add("n", 7) == 7);
  CHECK(table.get("n") == std::optional<std::string>("7"));
  CHECK(table.add("n", 5) == 12);
  CHECK(table.get("n") == std::optional<std::string>("12"));
  CHECK(table.add("n", 0) == 12);
  CHECK(table.get("n") == std::optional<std::string>("12"));
}

TEST_CASE("add with negative deltas goes below zero", "[store_table]") {
  StoreTable table;
  CHECK(table.add("n", -3) == -3);
  CHECK(table.get("n") == std::optional<std::string>("-3"));
  CHECK(table.add("n", 10) == 7);
  CHECK(table.add("n", -7) == 0);
  CHECK(table.get("n") == std::optional<std::string>("0"));
}

TEST_CASE("add on a value set as decimal text adds to it", "[store_table]") {
  StoreTable table;
  table.set("n", "12");
  CHECK(table.add("n", 1) == 13);
  CHECK(table.get("n") == std::optional<std::string>("13"));
  table.set("m", "-40");
  CHECK(table.add("m", 2) == -38);
}

TEST_CASE("add on a value that is not an integer throws and keeps the value", "[store_table]") {
  StoreTable table;
  table.set("s", "abc");
  CHECK_THROWS_AS(table.add("s", 1), std::invalid_argument);
  CHECK(table.get("s") == std::optional<std::string>("abc"));

  table.set("u", "");
  CHECK_THROWS_AS(table.add("u", 1), std::invalid_argument);
  CHECK(table.get("u") == std::optional<std::string>(""));
}

// TCPSTORE_PROTOCOL.md §5.2: torch 1.13 was observed to wrap INT64_MAX + 1 to INT64_MIN.
TEST_CASE("add wraps around at the int64 limits", "[store_table]") {
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
  StoreTable table;
  CHECK(table.add("n", kMax) == kMax);
  CHECK(table.get("n") == std::optional<std::string>("9223372036854775807"));
  CHECK(table.add("n", 1) == kMin);
  CHECK(table.get("n") == std::optional<std::string>("-9223372036854775808"));
  CHECK(table.add("n", -1) == kMax);  // and back down through the minimum
  CHECK(table.add("m", kMin) == kMin);
  CHECK(table.add("m", kMin) == 0);
}

TEST_CASE("append creates a missing key and extends an existing one", "[store_table]") {
  StoreTable table;
  table.append("k", "ab");
  CHECK(table.get("k") == std::optional<std::string>("ab"));
  table.append("k", std::string("\0c", 2));
  CHECK(table.get("k") == std::optional<std::string>(std::string("ab\0c", 4)));
  table.append("k", "");
  CHECK(table.get("k") == std::optional<std::string>(std::string("ab\0c", 4)));
  CHECK(table.size() == 1);

  table.append("e", "");
  CHECK(table.contains("e"));
  CHECK(table.get("e") == std::optional<std::string>(""));
}

TEST_CASE("erase returns 1 for an existing key and 0 otherwise", "[store_table]") {
  StoreTable table;
  table.set("a", "1");
  table.set("b", "2");
  CHECK(table.erase("a") == 1);
  CHECK_FALSE(table.contains("a"));
  CHECK(table.size() == 1);
  CHECK(table.erase("a") == 0);
  CHECK(table.erase("never") == 0);
  CHECK(table.get("b") == std::optional<std::string>("2"));
  CHECK(table.erase("b") == 1);
  CHECK(table.size() == 0);
}

TEST_CASE("containsAll is true only when every key exists", "[store_table]") {
  StoreTable table;
  CHECK(table.containsAll({}));
  table.set("a", "");
  table.set("b", "");
  CHECK(table.containsAll({"a"}));
  CHECK(table.containsAll({"a", "b"}));
  CHECK_FALSE(table.containsAll({"a", "c"}));
  CHECK_FALSE(table.containsAll({"c"}));
}

// ---------------------------------------------------------------------------------------
// Waiters

TEST_CASE("addWaiter returns 0 and calls nothing when every key exists", "[store_table]") {
  StoreTable table;
  table.set("a", "1");
  table.set("b", "2");
  Counter counter;
  CHECK(table.addWaiter({"a", "b"}, counter.wakeup()) == 0);
  CHECK(table.addWaiter({}, counter.wakeup()) == 0);
  CHECK(counter.calls == 0);
  CHECK(table.waiterCount() == 0);
}

TEST_CASE("a waiter fires exactly once when its last missing key appears", "[store_table]") {
  StoreTable table;
  table.set("present", "x");
  Counter counter;
  StoreTable::WaiterId id = table.addWaiter({"present", "a", "b"}, counter.wakeup());
  CHECK(id != 0);
  CHECK(table.waiterCount() == 1);

  table.set("a", "1");
  CHECK(counter.calls == 0);  // "b" is still missing
  CHECK(table.waiterCount() == 1);

  table.set("b", "2");
  CHECK(counter.calls == 1);
  CHECK(table.waiterCount() == 0);

  // Later writes, re-creations and cancels of the fired waiter do nothing more.
  table.set("b", "3");
  table.erase("a");
  table.set("a", "again");
  table.cancelWaiter(id);
  CHECK(counter.calls == 1);
  CHECK(table.waiterCount() == 0);
}

TEST_CASE("a waiter listing a key twice fires when the key appears once", "[store_table]") {
  StoreTable table;
  Counter counter;
  CHECK(table.addWaiter({"k", "k"}, counter.wakeup()) != 0);
  table.set("k", "v");
  CHECK(counter.calls == 1);
  CHECK(table.waiterCount() == 0);
}

TEST_CASE("every way of creating a key wakes its waiter", "[store_table]") {
  StoreTable table;
  Counter counter;
  REQUIRE(table.addWaiter({"k"}, counter.wakeup()) != 0);

  SECTION("set") { table.set("k", "v"); }
  SECTION("add") { table.add("k", 1); }
  SECTION("append") { table.append("k", "v"); }
  SECTION("compareSet that creates") { CHECK(table.compareSet("k", "", "v") == "v"); }
  SECTION("setEphemeral") { table.setEphemeral("k", "v", 42); }

  CHECK(counter.calls == 1);
  CHECK(table.waiterCount() == 0);
}

TEST_CASE("a compareSet that creates nothing does not wake a waiter", "[store_table]") {
  StoreTable table;
  Counter counter;
  REQUIRE(table.addWaiter({"k"}, counter.wakeup()) != 0);
  CHECK(table.compareSet("k", "expected", "v") == "expected");
  CHECK(counter.calls == 0);
  CHECK(table.waiterCount() == 1);
}

TEST_CASE("a waiter does not fire while only some of its keys exist", "[store_table]") {
  StoreTable table;
  Counter counter;
  REQUIRE(table.addWaiter({"a", "b", "c"}, counter.wakeup()) != 0);
  table.set("a", "");
  table.add("b", 1);
  table.set("a", "again");  // overwriting a key that already appeared does not count twice
  table.append("b", "0");
  CHECK(counter.calls == 0);
  CHECK(table.waiterCount() == 1);
  table.append("c", "");
  CHECK(counter.calls == 1);
}

TEST_CASE("several waiters on the same key all fire once", "[store_table]") {
  StoreTable table;
  Counter first, second, third;
  StoreTable::WaiterId a = table.addWaiter({"k"}, first.wakeup());
  StoreTable::WaiterId b = table.addWaiter({"k"}, second.wakeup());
  StoreTable::WaiterId c = table.addWaiter({"k", "other"}, third.wakeup());
  CHECK(a != 0);
  CHECK(b != 0);
  CHECK(c != 0);
  CHECK(a != b);
  CHECK(b != c);
  CHECK(a != c);
  CHECK(table.waiterCount() == 3);

  table.set("k", "v");
  CHECK(first.calls == 1);
  CHECK(second.calls == 1);
  CHECK(third.calls == 0);  // still waits for "other"
  CHECK(table.waiterCount() == 1);

  table.set("other", "v");
  CHECK(third.calls == 1);
  CHECK(table.waiterCount() == 0);
}

TEST_CASE("cancelWaiter stops a waiter from firing and forgets it", "[store_table]") {
  StoreTable table;
  Counter cancelled, kept;
  StoreTable::WaiterId gone = table.addWaiter({"a", "b"}, cancelled.wakeup());
  StoreTable::WaiterId stays = table.addWaiter({"a"}, kept.wakeup());
  REQUIRE(gone != 0);
  REQUIRE(stays != 0);
  table.set("a", "1");  // half of `gone`, all of `stays`
  CHECK(kept.calls == 1);
  CHECK(table.waiterCount() == 1);

  table.cancelWaiter(gone);
  CHECK(table.waiterCount() == 0);
  table.set("b", "2");
  CHECK(cancelled.calls == 0);

  // Cancelling again, or cancelling ids never handed out, is harmless.
  table.cancelWaiter(gone);
  table.cancelWaiter(0);
  table.cancelWaiter(987654);
  CHECK(table.waiterCount() == 0);
}

TEST_CASE("cancelWaiter on keys that never appear cleans up", "[store_table]") {
  StoreTable table;
  Counter counter;
  std::vector<StoreTable::WaiterId> ids;
  for (int i = 0; i < 100; ++i) {
    ids.push_back(table.addWaiter({"never-" + std::to_string(i % 7), "never-common"}, counter.wakeup()));
  }
  CHECK(table.waiterCount() == 100);
  for (StoreTable::WaiterId id : ids) table.cancelWaiter(id);
  CHECK(table.waiterCount() == 0);
  CHECK(counter.calls == 0);

  // The keys appearing afterwards wake no one, and a new waiter on them still works.
  for (int i = 0; i < 7; ++i) table.set("never-" + std::to_string(i), "");
  CHECK(counter.calls == 0);
  Counter fresh;
  REQUIRE(table.addWaiter({"never-common"}, fresh.wakeup()) != 0);
  table.set("never-common", "");
  CHECK(fresh.calls == 1);
  CHECK(counter.calls == 0);
  CHECK(table.waiterCount() == 0);
}

TEST_CASE("cancelling one of several waiters on a key leaves the others", "[store_table]") {
  StoreTable table;
  Counter first, second, third;
  table.addWaiter({"k"}, first.wakeup());
  StoreTable::WaiterId middle = table.addWaiter({"k"}, second.wakeup());
  table.addWaiter({"k"}, third.wakeup());
  table.cancelWaiter(middle);
  CHECK(table.waiterCount() == 2);
  table.set("k", "");
  CHECK(first.calls == 1);
  CHECK(second.calls == 0);
  CHECK(third.calls == 1);
  CHECK(table.waiterCount() == 0);
}

TEST_CASE("a wakeup may write to the table and complete another waiter", "[store_table]") {
  StoreTable table;
  std::vector<std::string> order;
  table.addWaiter({"second"}, [&] { order.push_back("second waiter"); });
  table.addWaiter({"first"}, [&] {
    order.push_back("first waiter");
    // Re-entering the table from a wakeup: writes, reads and a new waiter.
    table.set("second", "from first");
    CHECK(table.get("first") == std::optional<std::string>("v"));
    table.addWaiter({"third"}, [&] { order.push_back("third waiter"); });
  });

  table.set("first", "v");
  CHECK(order == std::vector<std::string>{"first waiter", "second waiter"});
  CHECK(table.get("second") == std::optional<std::string>("from first"));
  CHECK(table.waiterCount() == 1);

  table.add("third", 1);
  CHECK(order == std::vector<std::string>{"first waiter", "second waiter", "third waiter"});
  CHECK(table.waiterCount() == 0);
}

TEST_CASE("a wakeup may add a waiter on the key that just appeared", "[store_table]") {
  StoreTable table;
  int inner = -1;
  int outer = 0;
  table.addWaiter({"k"}, [&] {
    ++outer;
    // The key exists now, so this one returns 0 and is not called.
    inner = static_cast<int>(table.addWaiter({"k"}, [&] { inner = 99; }));
  });
  table.set("k", "");
  CHECK(outer == 1);
  CHECK(inner == 0);
  CHECK(table.waiterCount() == 0);
}

// ---------------------------------------------------------------------------------------
// Ephemeral keys

TEST_CASE("dropOwner deletes exactly that owner's ephemeral keys", "[store_table]") {
  StoreTable table;
  table.setEphemeral("a1", "x", 1);
  table.setEphemeral("a2", "y", 1);
  table.setEphemeral("b1", "z", 2);
  table.set("plain", "p");
  CHECK(table.size() == 4);
  CHECK(table.get("a1") == std::optional<std::string>("x"));

  table.dropOwner(1);
  CHECK_FALSE(table.contains("a1"));
  CHECK_FALSE(table.contains("a2"));
  CHECK(table.get("b1") == std::optional<std::string>("z"));
  CHECK(table.get("plain") == std::optional<std::string>("p"));
  CHECK(table.size() == 2);

  table.dropOwner(1);  // a second drop of the same owner does nothing
  CHECK(table.size() == 2);

  table.dropOwner(2);
  CHECK_FALSE(table.contains("b1"));
  CHECK(table.size() == 1);
}

TEST_CASE("a plain set makes an ephemeral key permanent", "[store_table]") {
  StoreTable table;
  table.setEphemeral("k", "mine", 7);
  table.set("k", "everyone's");
  table.dropOwner(7);
  CHECK(table.get("k") == std::optional<std::string>("everyone's"));
}

TEST_CASE("add and a matching compareSet make an ephemeral key permanent", "[store_table]") {
  StoreTable table;
  table.setEphemeral("counter", "1", 7);
  table.setEphemeral("cas", "old", 7);
  CHECK(table.add("counter", 1) == 2);
  CHECK(table.compareSet("cas", "old", "new") == "new");
  table.dropOwner(7);
  CHECK(table.get("counter") == std::optional<std::string>("2"));
  CHECK(table.get("cas") == std::optional<std::string>("new"));
}

TEST_CASE("a key re-set ephemeral by another owner belongs to that owner", "[store_table]") {
  StoreTable table;
  table.setEphemeral("k", "first", 1);
  table.setEphemeral("k", "second", 2);
  table.dropOwner(1);
  CHECK(table.get("k") == std::optional<std::string>("second"));
  table.dropOwner(2);
  CHECK_FALSE(table.contains("k"));
}

TEST_CASE("an ephemeral key erased and re-created plainly survives its old owner", "[store_table]") {
  StoreTable table;
  table.setEphemeral("k", "eph", 3);
  CHECK(table.erase("k") == 1);
  table.set("k", "plain");
  table.dropOwner(3);
  CHECK(table.get("k") == std::optional<std::string>("plain"));
}

TEST_CASE("dropOwner of an unknown owner changes nothing", "[store_table]") {
  StoreTable table;
  table.set("plain", "p");
  table.setEphemeral("e", "x", 5);
  table.dropOwner(6);
  table.dropOwner(0);  // 0 is "nobody": plain keys are never dropped
  CHECK(table.size() == 2);
  CHECK(table.get("plain") == std::optional<std::string>("p"));
  CHECK(table.get("e") == std::optional<std::string>("x"));
}

TEST_CASE("dropOwner wakes no waiter, and a key re-created after the drop does", "[store_table]") {
  StoreTable table;
  table.setEphemeral("present", "x", 4);
  Counter counter;
  REQUIRE(table.addWaiter({"present", "later"}, counter.wakeup()) != 0);
  table.dropOwner(4);
  CHECK(counter.calls == 0);
  table.set("later", "");
  CHECK(counter.calls == 1);  // "present" counted when the waiter was added
}

// ---------------------------------------------------------------------------------------
// Close notices

TEST_CASE("a close notice sets its key when its owner is dropped, and wakes the waiters", "[store_table]") {
  StoreTable table;
  table.setCloseNotice(7, "round-1/ended", "node_lost");
  CHECK(table.closeNoticeCount() == 1);
  CHECK_FALSE(table.contains("round-1/ended"));  // nothing happens while the owner lives
  Counter waiter, other;
  REQUIRE(table.addWaiter({"round-1/ended"}, waiter.wakeup()) != 0);
  REQUIRE(table.addWaiter({"round-1/ended", "later"}, other.wakeup()) != 0);

  table.dropOwner(7);
  CHECK(table.get("round-1/ended") == std::optional<std::string>("node_lost"));
  CHECK(waiter.calls == 1);
  CHECK(other.calls == 0);  // still waits for "later"
  CHECK(table.closeNoticeCount() == 0);

  // Fired once: a second drop, after the key is gone, sets nothing.
  CHECK(table.erase("round-1/ended") == 1);
  table.dropOwner(7);
  CHECK_FALSE(table.contains("round-1/ended"));
}

TEST_CASE("a close notice leaves an existing key alone, even one holding an empty value", "[store_table]") {
  StoreTable table;
  SECTION("a value") { table.set("k", "first"); }
  SECTION("an empty value") { table.set("k", ""); }
  SECTION("a counter") { table.add("k", 3); }
  const std::string before = *table.get("k");
  table.setCloseNotice(1, "k", "notice");
  table.dropOwner(1);
  CHECK(table.get("k") == std::optional<std::string>(before));
}

TEST_CASE("a key written by anyone before the owner goes wins over its close notice", "[store_table]") {
  StoreTable table;
  table.setCloseNotice(1, "k", "notice");
  table.set("k", "written");
  table.dropOwner(1);
  CHECK(table.get("k") == std::optional<std::string>("written"));
}

TEST_CASE("a later close notice replaces the earlier one, an empty key clears it", "[store_table]") {
  StoreTable table;
  SECTION("replaced: only the latest fires") {
    table.setCloseNotice(1, "first", "1");
    table.setCloseNotice(1, "second", "2");
    CHECK(table.closeNoticeCount() == 1);
    table.dropOwner(1);
    CHECK_FALSE(table.contains("first"));
    CHECK(table.get("second") == std::optional<std::string>("2"));
  }
  SECTION("replaced on the same key: the latest value") {
    table.setCloseNotice(1, "k", "old");
    table.setCloseNotice(1, "k", "new");
    table.dropOwner(1);
    CHECK(table.get("k") == std::optional<std::string>("new"));
  }
  SECTION("cleared: nothing fires") {
    table.setCloseNotice(1, "k", "v");
    table.setCloseNotice(1, "", "ignored");
    CHECK(table.closeNoticeCount() == 0);
    table.dropOwner(1);
    CHECK(table.size() == 0);
  }
  SECTION("cleared, then registered again") {
    table.setCloseNotice(1, "k", "v");
    table.setCloseNotice(1, "", "");
    table.setCloseNotice(1, "k2", "v2");
    table.dropOwner(1);
    CHECK_FALSE(table.contains("k"));
    CHECK(table.get("k2") == std::optional<std::string>("v2"));
  }
  SECTION("clearing an owner without a notice does nothing") {
    table.setCloseNotice(1, "", "");
    CHECK(table.closeNoticeCount() == 0);
  }
}

TEST_CASE("close notices are per owner, owner 0 has none", "[store_table]") {
  StoreTable table;
  table.setCloseNotice(1, "a", "from 1");
  table.setCloseNotice(2, "b", "from 2");
  table.setCloseNotice(0, "c", "from nobody");
  CHECK(table.closeNoticeCount() == 2);
  table.dropOwner(2);
  CHECK_FALSE(table.contains("a"));
  CHECK(table.get("b") == std::optional<std::string>("from 2"));
  table.dropOwner(0);
  CHECK_FALSE(table.contains("c"));
  table.dropOwner(1);
  CHECK(table.get("a") == std::optional<std::string>("from 1"));
  CHECK(table.closeNoticeCount() == 0);
}

TEST_CASE("two owners' notices on one key: the first to go sets it", "[store_table]") {
  StoreTable table;
  table.setCloseNotice(1, "ended", "1 lost");
  table.setCloseNotice(2, "ended", "2 lost");
  table.dropOwner(2);
  table.dropOwner(1);
  CHECK(table.get("ended") == std::optional<std::string>("2 lost"));
}

TEST_CASE("the owner's ephemeral keys go before its close notice is applied", "[store_table]") {
  StoreTable table;
  table.setEphemeral("alive/1", "yes", 1);
  table.setEphemeral("other", "x", 1);
  table.setCloseNotice(1, "alive/1", "gone");  // the notice names the owner's own ephemeral key
  table.dropOwner(1);
  CHECK(table.get("alive/1") == std::optional<std::string>("gone"));
  CHECK_FALSE(table.contains("other"));
  table.dropOwner(1);  // the notice's key is a plain key now: it stays
  CHECK(table.get("alive/1") == std::optional<std::string>("gone"));
}

TEST_CASE("a wakeup run by a close notice may call back into the table", "[store_table]") {
  StoreTable table;
  table.setCloseNotice(1, "ended", "v");
  std::optional<std::string> seen;
  table.addWaiter({"ended"}, [&] {
    seen = table.get("ended");
    table.dropOwner(1);                        // already forgotten: fires nothing again
    table.setCloseNotice(1, "again", "late");  // a notice registered meanwhile waits for the next drop
  });
  table.dropOwner(1);
  CHECK(seen == std::optional<std::string>("v"));
  CHECK_FALSE(table.contains("again"));
  CHECK(table.closeNoticeCount() == 1);
}

// ---------------------------------------------------------------------------------------
// Limits: what the whole table may hold

TEST_CASE("the table counts the bytes of its keys and values through every write and delete", "[store_table]") {
  StoreTable table;
  table.set("ab", "123");
  CHECK(table.bytes() == keyCost(2, 3));
  table.set("ab", "1");  // replaced
  CHECK(table.bytes() == keyCost(2, 1));
  table.append("ab", "2345");
  CHECK(table.bytes() == keyCost(2, 5));
  CHECK(table.compareSet("ab", "12345", "x") == "x");
  CHECK(table.bytes() == keyCost(2, 1));
  table.add("n", 10);
  CHECK(table.bytes() == keyCost(2, 1) + keyCost(1, 2));
  table.setEphemeral("e", "vv", 7);  // and its second copy, in its owner's set
  table.setMany({"m1", "m2", "m1"}, {"a", "b", "cc"});
  const std::uint64_t ephemeral = keyCost(1, 2) + cost::kOwnership + 1;
  CHECK(table.bytes() == keyCost(2, 1) + keyCost(1, 2) + ephemeral + keyCost(2, 1) + keyCost(2, 2));
  CHECK(table.bytes() == table.recountBytes());
  table.dropOwner(7);
  CHECK(table.bytes() == keyCost(2, 1) + keyCost(1, 2) + keyCost(2, 1) + keyCost(2, 2));
  CHECK(table.erase("m1") == 1);
  CHECK(table.erase("m2") == 1);
  CHECK(table.erase("n") == 1);
  CHECK(table.erase("ab") == 1);
  CHECK(table.bytes() == 0);
}

TEST_CASE("writes past the table's limits throw TableFull and change nothing", "[store_table]") {
  TableLimits limits;
  limits.maxValueSize = 8;
  limits.maxBytes = 2 * keyCost(4, 8) + keyCost(0, 5);  // two keys of 12 bytes, and a little
  limits.maxKeys = 3;
  StoreTable table(limits);
  SECTION("APPEND cannot grow a value past maxValueSize") {
    table.append("log", "12345");
    CHECK_THROWS_AS(table.append("log", "6789"), TableFull);
    CHECK(table.get("log") == "12345");
  }
  SECTION("a new key past maxKeys") {
    table.set("a", "1");
    table.set("b", "1");
    table.set("c", "1");
    CHECK_THROWS_AS(table.set("d", "1"), TableFull);
    CHECK_FALSE(table.contains("d"));
    table.set("a", "2");  // replacing an existing key is not a new one
    CHECK(table.get("a") == "2");
  }
  SECTION("bytes past maxBytes, for SET, ADD, COMPARE_SET and a whole MULTI_SET") {
    table.set("key1", "12345678");
    table.set("key2", "12345678");
    CHECK_THROWS_AS(table.set("key3", "12345678"), TableFull);
    CHECK_THROWS_AS(table.compareSet("key3", "", "12345678"), TableFull);
    CHECK_THROWS_AS(table.setMany({"x", "y"}, {"123", "1234"}), TableFull);  // two more keys
    CHECK_FALSE(table.contains("x"));                                        // none of the MULTI_SET was applied
    CHECK_FALSE(table.contains("y"));
    CHECK(table.bytes() == 2 * keyCost(4, 8));
    table.add("n", 5);  // within the little left
    CHECK(table.get("n") == "5");
  }
  SECTION("a waiter is not woken by a write that was refused") {
    StoreTable keyLimited(TableLimits{8, std::numeric_limits<std::uint64_t>::max(), 3});
    bool woken = false;
    keyLimited.set("a", "1");
    keyLimited.set("b", "1");
    keyLimited.set("c", "1");
    CHECK(keyLimited.addWaiter({"d"}, [&] { woken = true; }) != 0);
    CHECK_THROWS_AS(keyLimited.set("d", "1"), TableFull);
    CHECK_FALSE(woken);
  }
}

TEST_CASE("a close notice is applied even when the table is full", "[store_table]") {
  TableLimits limits;
  limits.maxKeys = 1;
  StoreTable table(limits);
  table.set("only", "1");
  table.setCloseNotice(4, "pltrun/rdzv/run/r0/end", "lost");
  table.dropOwner(4);
  CHECK(table.get("pltrun/rdzv/run/r0/end") == "lost");
}

TEST_CASE("printableKey escapes what could forge or colour a log line", "[store_table]") {
  CHECK(printableKey("pltrun/rdzv/x") == "'pltrun/rdzv/x'");
  CHECK(printableKey(std::string("a\nb\x1b[31m\0", 9)) == "'a\\x0ab\\x1b[31m\\x00'");
  CHECK(printableKey("it's") == "'it\\x27s'");
  const std::string shown = printableKey(std::string(500, 'k'));
  CHECK(shown.size() < 90);
  CHECK(shown.substr(shown.size() - 4) == "'...");
}

TEST_CASE("a barrier releases its waiters when the last of N arrives, and keeps its count as a key",
          "[store_table][barrier]") {
  StoreTable table;
  Counter first, second;
  const auto a = table.arriveAtBarrier("b", 3, first.wakeup());
  const auto b = table.arriveAtBarrier("b", 3, second.wakeup());
  CHECK(a != 0);
  CHECK(b != 0);
  CHECK(first.calls == 0);
  CHECK(table.get("b") == "2");
  CHECK(table.arriveAtBarrier("b", 3, [] {}) == 0);  // the last goes on at once
  CHECK(first.calls == 1);
  CHECK(second.calls == 1);
  CHECK(table.waiterCount() == 0);
  CHECK(table.arriveAtBarrier("b", 3, [] {}) == 0);  // later arrivals pass, as under torch
}

TEST_CASE("a cancelled barrier participant is not woken, and one of world size 1 never waits",
          "[store_table][barrier]") {
  StoreTable table;
  Counter cancelled;
  table.cancelWaiter(table.arriveAtBarrier("b", 2, cancelled.wakeup()));
  CHECK(table.arriveAtBarrier("b", 2, [] {}) == 0);
  CHECK(cancelled.calls == 0);
  CHECK(table.arriveAtBarrier("alone", 1, [] {}) == 0);
  table.set("text", "abc");
  CHECK_THROWS_AS(table.arriveAtBarrier("text", 2, [] {}), std::invalid_argument);
}

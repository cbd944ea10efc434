// What StoreTable charges against --max-store-bytes and --max-keys for everything a client
// can make it hold (rendezvous/store/store_costs.h): parked requests, close notices, the
// ownership of ephemeral keys, barrier arrivals. A charge is given back when the thing goes,
// a refusal changes nothing, and bytes() always equals what the table holds, counted again.

#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "rendezvous/store/store_costs.h"
#include "rendezvous/store/store_table.h"

using pltrun::rdzv::StoreTable;
using pltrun::rdzv::TableFull;
using pltrun::rdzv::TableLimits;
namespace cost = pltrun::rdzv::cost;

namespace {

TableLimits bytesOnly(std::uint64_t maxBytes) {
  TableLimits limits;
  limits.maxBytes = maxBytes;
  return limits;
}

}  // namespace

TEST_CASE("a parked wait is charged its keys three times over until it fires or is cancelled",
          "[store_table][accounting]") {
  StoreTable table;
  const std::vector<std::string> keys{std::string(1000, 'a'), std::string(2000, 'b')};
  int woken = 0;
  StoreTable::WaiterId waiter = table.addWaiter(keys, [&] { ++woken; });
  REQUIRE(waiter != 0);
  CHECK(table.bytes() == cost::kWaiter + 2 * cost::kWaitedKey + 3 * 3000);
  CHECK(table.bytes() == table.recountBytes());
  table.cancelWaiter(waiter);
  CHECK(table.bytes() == 0);

  table.addWaiter(keys, [&] { ++woken; });
  table.set(keys[0], "");
  table.set(keys[1], "");  // fires: its charge goes, the two keys stay
  CHECK(woken == 1);
  CHECK(table.bytes() == 2 * cost::kKey + 3000);
  CHECK(table.bytes() == table.recountBytes());
}

TEST_CASE("a wait past the byte limit is refused and changes nothing", "[store_table][accounting]") {
  const std::string big(20000, 'k');
  StoreTable table(bytesOnly(4 * cost::ofWaiter({big})));
  int woken = 0;
  for (int i = 0; i < 4; ++i) REQUIRE(table.addWaiter({big}, [&] { ++woken; }) != 0);
  try {
    table.addWaiter({big}, [&] { ++woken; });
    FAIL("a fifth wait of the same size was parked");
  } catch (const TableFull& full) {
    CHECK_THAT(full.what(), Catch::Contains("a wait on 1 key(s) would take the store past its limit of"));
  }
  CHECK(table.waiterCount() == 4);
  CHECK(table.bytes() == 4 * cost::ofWaiter({big}));
  CHECK_THROWS_AS(table.set(big, "v"), TableFull);  // the parked waits hold the budget
  CHECK(woken == 0);
}

TEST_CASE("a close notice is charged until it is cleared or applied, and refused past the limit",
          "[store_table][accounting]") {
  const std::uint64_t notice = cost::kCloseNotice + 3 + 1000;
  StoreTable table(bytesOnly(notice + cost::kCloseNotice));
  table.setCloseNotice(1, "end", std::string(1000, 'x'));
  CHECK(table.bytes() == notice);
  CHECK_THROWS_AS(table.setCloseNotice(2, "end", std::string(1000, 'y')), TableFull);
  CHECK(table.closeNoticeCount() == 1);
  table.setCloseNotice(1, "end", "short");  // replaces: charged the new one only
  CHECK(table.bytes() == cost::kCloseNotice + 3 + 5);
  table.setCloseNotice(1, "", "");
  CHECK(table.bytes() == 0);
  table.setCloseNotice(1, "end", "lost");
  table.dropOwner(1);  // applied: the charge passes to the key it set
  CHECK(table.get("end") == "lost");
  CHECK(table.bytes() == cost::kKey + 3 + 4);
  CHECK(table.bytes() == table.recountBytes());
}

TEST_CASE("an ephemeral key written over by another client leaves its owner's set and charge",
          "[store_table][accounting]") {
  StoreTable table;
  // SET_EPHEMERAL then SET of ever new keys, then DELETE_KEY: nothing is left behind.
  for (int i = 0; i < 1000; ++i) {
    const std::string key = "k" + std::to_string(i);
    table.setEphemeral(key, "v", 7);
    CHECK(table.bytes() == cost::ofKey(key, 1, true));
    table.set(key, "w");
    CHECK(table.bytes() == cost::ofKey(key, 1, false));
    table.erase(key);
  }
  CHECK(table.bytes() == 0);
  table.setEphemeral("mine", "v", 7);
  table.append("mine", "x");  // no longer ephemeral: survives its writer
  table.dropOwner(7);
  CHECK(table.get("mine") == "vx");
  CHECK(table.bytes() == table.recountBytes());
}

TEST_CASE("a barrier arrival past the limits is refused before it counts", "[store_table][accounting]") {
  StoreTable table(bytesOnly(cost::ofWaiter({"b"}) + cost::ofKey("b", 20, false)));
  int released = 0;
  REQUIRE(table.arriveAtBarrier("b", 3, [&] { ++released; }) != 0);
  CHECK(table.get("b") == "1");
  CHECK_THROWS_AS(table.arriveAtBarrier("b", 3, [&] { ++released; }), TableFull);
  CHECK(table.get("b") == "1");  // the refused arrival did not count
  CHECK(table.waiterCount() == 1);
  CHECK(table.bytes() == table.recountBytes());
}

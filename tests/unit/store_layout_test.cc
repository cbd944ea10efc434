// store_layout: every key an elastic job keeps is built in one place and documented in its
// kLayout table; a value pltrun does not write is a MalformedJobState, a type of its own.

#include "rendezvous/elastic/store_layout.h"

#include <catch2/catch.hpp>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "rendezvous/elastic/store_json.h"

namespace layout = pltrun::rdzv::layout;

namespace {

// The kLayout row whose pattern `key` matches (R and I stand for numbers), or "".
std::string rowOf(const std::string& key) {
  for (const layout::KeyRow& row : layout::kLayout) {
    std::string pattern = row.pattern;
    pattern = std::regex_replace(pattern, std::regex("R"), "[0-9]+");
    pattern = std::regex_replace(pattern, std::regex("/I$"), "/[1-9][0-9]*");
    if (std::regex_match(key, std::regex(pattern))) return row.pattern;
  }
  return "";
}

}  // namespace

TEST_CASE("store layout: every key built is a documented row, and every row is built", "[store_layout]") {
  std::vector<std::string> built = {layout::kRound, layout::kFailures, layout::kClosed, layout::kExclusions};
  for (const std::string& key : layout::keysOfRound(12, 3)) built.push_back(key);
  std::set<std::string> rowsSeen;
  for (const std::string& key : built) {
    INFO(key);
    const std::string row = rowOf(key);
    CHECK_FALSE(row.empty());
    rowsSeen.insert(row);
  }
  for (const layout::KeyRow& row : layout::kLayout) {
    INFO(row.pattern);
    CHECK(rowsSeen.count(row.pattern) == 1);  // forgetting a round misses none of its keys
  }
}

TEST_CASE("store layout: the names pltrun status reads", "[store_layout]") {
  CHECK(pltrun::rdzv::jobKeyPrefix("job7") == "pltrun/rdzv/job7/");
  CHECK(layout::end(3) == "r3/end");
  CHECK(layout::slot(0, 2) == "r0/slot/2");
  CHECK(layout::masterPort(1) == "r1/master_port");
  CHECK(layout::keysOfRound(4, 2).back() == "r4/count");  // last: a failed pass can be done again
  CHECK(layout::keysOfRound(4, 2).size() == 7 + 2 * 4 + 1);
}

TEST_CASE("store layout: a heartbeat key gives back its slot, nothing else does", "[store_layout]") {
  CHECK(layout::beatSlot(2, layout::beat(2, 5)) == 5);
  CHECK(layout::beatSlot(2, "r2/beat/17") == 17);
  CHECK_FALSE(layout::beatSlot(3, layout::beat(2, 5)));  // another round
  CHECK_FALSE(layout::beatSlot(2, "r2/state/5"));
  CHECK_FALSE(layout::beatSlot(2, "r2/beat/"));
  CHECK_FALSE(layout::beatSlot(2, "r2/beat/5x"));
  CHECK_FALSE(layout::beatSlot(2, "r2/beat/0"));
}

TEST_CASE("store layout: a value pltrun does not write is a MalformedJobState naming the key", "[store_layout]") {
  using pltrun::rdzv::MalformedJobState;
  using pltrun::rdzv::storedDecimal;
  CHECK(storedDecimal("pltrun/rdzv/j/r0/master_port", "29500", 1, 65535, "port") == 29500);
  for (const char* text : {"", "0", "65536", "-1", "29500 ", "port", "1e3"}) {
    INFO(text);
    try {
      storedDecimal("pltrun/rdzv/j/r0/master_port", text, 1, 65535, "port");
      FAIL("accepted");
    } catch (const MalformedJobState& error) {
      CHECK(error.code() == pltrun::ErrorCode::Protocol);
      CHECK_THAT(error.what(), Catch::Contains("at 'pltrun/rdzv/j/r0/master_port', not the port pltrun writes there"));
    }
  }
  CHECK_THROWS_AS(pltrun::rdzv::parseStoreObject("[1]", "round end"), MalformedJobState);
}

TEST_CASE("store layout: a number that is not an int where pltrun writes one is a MalformedJobState",
          "[store_layout]") {
  using pltrun::rdzv::MalformedJobState;
  using pltrun::rdzv::storeField;
  CHECK(storeField<int>(nlohmann::json::parse(R"({"status": -7})"), "status", "round end") == -7);
  CHECK(storeField<int>(nlohmann::json::parse(R"({"status": 2147483647})"), "status", "round end") == 2147483647);
  // nlohmann alone casts these: a float beyond int is undefined behaviour (found by fuzz_store_values).
  for (const char* text : {R"({"status": 37777777777777777777777})", R"({"status": 3.5})", R"({"status": 2147483648})",
                           R"({"status": -2147483649})", R"({"status": "3"})", R"({"status": true})"}) {
    INFO(text);
    CHECK_THROWS_AS(storeField<int>(nlohmann::json::parse(text), "status", "round end"), MalformedJobState);
  }
}

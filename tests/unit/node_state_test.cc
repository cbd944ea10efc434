// The node state an agent publishes under rR/state/I (node_state.h): what one agent writes,
// another reads back; what the store holds is untrusted, so bad shapes read as absent.

#include "rendezvous/elastic/node_state.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

using pltrun::rdzv::decodeNodeState;
using pltrun::rdzv::encodeNodeState;
using pltrun::rdzv::NodeState;

TEST_CASE("node state: what an agent publishes reads back the same", "[node_state]") {
  NodeState state;
  state.state = "running";
  state.workers = 2;
  state.host = "node-b";
  state.ranks = {{2, 40, 3.5, std::nullopt}, {3, std::nullopt, std::nullopt, std::nullopt}};
  const auto decoded = decodeNodeState(encodeNodeState(state));
  REQUIRE(decoded);
  CHECK(decoded->state == "running");
  CHECK(decoded->workers == 2);
  CHECK(decoded->host == "node-b");
  REQUIRE(decoded->ranks.size() == 2);
  CHECK(decoded->ranks[0].rank == 2);
  CHECK(decoded->ranks[0].step == 40);
  CHECK(decoded->ranks[0].silentSeconds == 3.5);
  CHECK_FALSE(decoded->ranks[1].step);
  CHECK_FALSE(decoded->ranks[1].silentSeconds);
}

TEST_CASE("node state: a value that is not a node state reads as none", "[node_state]") {
  for (const std::string& text :
       std::vector<std::string>{"", "5", "[]", "{}", "{\"state\":5}", "{\"state\":\"\"}", "not json",
                                std::string(100000, '[') + std::string(100000, ']')}) {
    CHECK_FALSE(decodeNodeState(text));
  }
}

TEST_CASE("node state: a worker count that is not a count makes the value none", "[node_state]") {
  for (const char* workers : {"\"two\"", "-2", "1.5", "2147483648", "null"}) {
    INFO(workers);
    CHECK_FALSE(decodeNodeState(R"({"state":"running","workers":)" + std::string(workers) + "}"));
  }
  CHECK(decodeNodeState(R"({"state":"running","workers":-1})")->workers == -1);  // not said
  CHECK(decodeNodeState(R"({"state":"running"})")->workers == -1);
}

TEST_CASE("node state: entries of the wrong shape are left out, wrong fields read as absent", "[node_state]") {
  const auto decoded = decodeNodeState(
      R"({"state":"running","host":7,"ranks":[5,{"rank":"1"},{"rank":-1},{"rank":4294967296},)"
      R"({"rank":1,"step":"9","silent":-2},{"rank":2,"step":1.5,"silent":"nan"},{"rank":3,"step":7,"silent":[1]}]})");
  REQUIRE(decoded);
  CHECK(decoded->workers == -1);
  CHECK(decoded->host.empty());
  REQUIRE(decoded->ranks.size() == 3);
  CHECK(decoded->ranks[0].rank == 1);
  CHECK_FALSE(decoded->ranks[0].step);
  CHECK_FALSE(decoded->ranks[0].silentSeconds);
  CHECK_FALSE(decoded->ranks[1].step);
  CHECK(decoded->ranks[2].step == 7);
  CHECK_FALSE(decoded->ranks[2].silentSeconds);

  // A deeply nested value where a rank should be costs no stack: it is skipped.
  const std::string deep =
      R"({"state":"running","ranks":[)" + std::string(100000, '[') + std::string(100000, ']') + "]}";
  const auto nested = decodeNodeState(deep);
  REQUIRE(nested);
  CHECK(nested->ranks.empty());
}

TEST_CASE("node state: step times and the goodput read back the same", "[node_state]") {
  NodeState state;
  state.state = "running";
  state.ranks = {{0, 40, 0.5, 0.21}, {1, 39, 0.5, std::nullopt}};
  state.goodput = pltrun::rdzv::NodeGoodput{50.0, 60.5, 8.25};
  const auto decoded = decodeNodeState(encodeNodeState(state));
  REQUIRE(decoded);
  REQUIRE(decoded->ranks.size() == 2);
  CHECK(decoded->ranks[0].stepSeconds == 0.21);
  CHECK_FALSE(decoded->ranks[1].stepSeconds);
  REQUIRE(decoded->goodput);
  CHECK(decoded->goodput->productiveSeconds == 50.0);
  CHECK(decoded->goodput->elapsedSeconds == 60.5);
  CHECK(decoded->goodput->lostSeconds == 8.25);

  state.goodput.reset();
  CHECK_FALSE(decodeNodeState(encodeNodeState(state))->goodput);
}

TEST_CASE("node state: a step time that is not a number of seconds from 0 up reads as absent", "[node_state]") {
  for (const char* value : {"-0.5", "\"0.2\"", "-1e-9", "null", "[1]", "{}", "true"}) {
    INFO(value);
    const auto decoded =
        decodeNodeState(R"({"state":"running","ranks":[{"rank":0,"step_s":)" + std::string(value) + "}]}");
    REQUIRE(decoded);
    REQUIRE(decoded->ranks.size() == 1);
    CHECK_FALSE(decoded->ranks[0].stepSeconds);
  }
  CHECK(decodeNodeState(R"({"state":"running","ranks":[{"rank":0,"step_s":0}]})")->ranks[0].stepSeconds == 0.0);
}

TEST_CASE("node state: a goodput with a figure missing or out of range reads as absent", "[node_state]") {
  for (const char* goodput : {R"({"productive_s":1,"elapsed_s":2})", R"({"productive_s":1,"elapsed_s":2,"lost_s":-1})",
                              R"({"productive_s":"1","elapsed_s":2,"lost_s":0})",
                              R"({"productive_s":1,"elapsed_s":true,"lost_s":0})", R"([1,2,3])", "5", "null"}) {
    INFO(goodput);
    const auto decoded = decodeNodeState(R"({"state":"running","goodput":)" + std::string(goodput) + "}");
    REQUIRE(decoded);
    CHECK_FALSE(decoded->goodput);
  }
  const auto whole = decodeNodeState(R"({"state":"running","goodput":{"productive_s":0,"elapsed_s":3,"lost_s":0}})");
  REQUIRE(whole->goodput);
  CHECK(whole->goodput->elapsedSeconds == 3.0);
}

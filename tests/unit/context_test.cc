// Context::fromLookup: where a process sits in the job, read from the launcher's variables
// (pltrun's and torchrun's), with every missing or malformed value named in the error.

#include "pltrun/context.h"

#include <catch2/catch.hpp>
#include <map>
#include <optional>
#include <string>

#include "pltrun/error.h"

using pltrun::Context;
using pltrun::Error;
using pltrun::ErrorCode;

namespace {

using Variables = std::map<std::string, std::string>;

Context contextFrom(const Variables& variables) {
  return Context::fromLookup([&variables](const char* name) -> const char* {
    auto found = variables.find(name);
    return found == variables.end() ? nullptr : found->second.c_str();
  });
}

// What pltrun sets for rank 5 of 8 (2 nodes of 4), attempt 3, with an agent store.
Variables fullEnvironment() {
  return {
      {"RANK", "5"},
      {"LOCAL_RANK", "1"},
      {"WORLD_SIZE", "8"},
      {"LOCAL_WORLD_SIZE", "4"},
      {"GROUP_RANK", "1"},
      {"GROUP_WORLD_SIZE", "2"},
      {"TORCHELASTIC_RESTART_COUNT", "3"},
      {"TORCHELASTIC_RUN_ID", "run-42"},
      {"MASTER_ADDR", "10.1.2.3"},
      {"MASTER_PORT", "29500"},
      {"TORCHELASTIC_USE_AGENT_STORE", "True"},
  };
}

// Only the five variables fromLookup requires once any launcher variable is set.
Variables requiredOnly() {
  return {{"RANK", "2"}, {"LOCAL_RANK", "0"}, {"WORLD_SIZE", "4"}, {"MASTER_ADDR", "node0"}, {"MASTER_PORT", "1234"}};
}

// The InvalidArgument message fromLookup throws for `variables` (fails the test when none).
std::optional<std::string> invalidArgumentMessage(const Variables& variables) {
  try {
    contextFrom(variables);
  } catch (const Error& error) {
    CHECK(error.code() == ErrorCode::InvalidArgument);
    return std::string(error.what());
  }
  return std::nullopt;
}

}  // namespace

TEST_CASE("without launcher variables the process is a world of one", "[context]") {
  // Unrelated variables do not count as a launcher.
  const Context context = contextFrom({{"PATH", "/usr/bin"}, {"HOME", "/root"}, {"NODE_RANK", "3"}});
  CHECK_FALSE(context.launched);
  CHECK(context.rank == 0);
  CHECK(context.localRank == 0);
  CHECK(context.worldSize == 1);
  CHECK(context.localWorldSize == 1);
  CHECK(context.nodeRank == 0);
  CHECK(context.numNodes == 1);
  CHECK(context.restartCount == 0);
  CHECK(context.runId.empty());
  CHECK(context.masterAddr.empty());
  CHECK(context.masterPort == 0);
  CHECK_FALSE(context.agentStore);

  const Context empty = contextFrom({});
  CHECK_FALSE(empty.launched);
  CHECK(empty.worldSize == 1);
}

TEST_CASE("a full pltrun environment sets every field", "[context]") {
  const Context context = contextFrom(fullEnvironment());
  CHECK(context.launched);
  CHECK(context.rank == 5);
  CHECK(context.localRank == 1);
  CHECK(context.worldSize == 8);
  CHECK(context.localWorldSize == 4);
  CHECK(context.nodeRank == 1);
  CHECK(context.numNodes == 2);
  CHECK(context.restartCount == 3);
  CHECK(context.runId == "run-42");
  CHECK(context.masterAddr == "10.1.2.3");
  CHECK(context.masterPort == 29500);
  CHECK(context.agentStore);
}

TEST_CASE("the extreme valid values are accepted", "[context]") {
  Variables variables = fullEnvironment();
  variables["RANK"] = "7";
  variables["LOCAL_RANK"] = "3";
  variables["GROUP_RANK"] = "0";
  variables["MASTER_PORT"] = "65535";
  Context context = contextFrom(variables);
  CHECK(context.rank == 7);
  CHECK(context.localRank == 3);
  CHECK(context.nodeRank == 0);
  CHECK(context.masterPort == 65535);

  variables["RANK"] = "0";
  variables["MASTER_PORT"] = "1";
  context = contextFrom(variables);
  CHECK(context.rank == 0);
  CHECK(context.masterPort == 1);
}

TEST_CASE("NODE_RANK is the node rank when GROUP_RANK is absent", "[context]") {
  Variables variables = fullEnvironment();
  variables.erase("GROUP_RANK");
  variables["GROUP_WORLD_SIZE"] = "4";
  variables["NODE_RANK"] = "3";
  CHECK(contextFrom(variables).nodeRank == 3);

  SECTION("GROUP_RANK wins when both are set") {
    variables["GROUP_RANK"] = "2";
    CHECK(contextFrom(variables).nodeRank == 2);
  }
  SECTION("a malformed NODE_RANK is named") {
    variables["NODE_RANK"] = "abc";
    auto message = invalidArgumentMessage(variables);
    REQUIRE(message);
    CHECK_THAT(*message, Catch::Contains("NODE_RANK") && Catch::Contains("abc"));
  }
  SECTION("neither: node 0") {
    variables.erase("NODE_RANK");
    CHECK(contextFrom(variables).nodeRank == 0);
  }
}

TEST_CASE("every required variable missing in turn is named", "[context]") {
  for (const char* name : {"RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"}) {
    INFO("missing " << name);
    for (const Variables& base : {fullEnvironment(), requiredOnly()}) {
      Variables variables = base;
      REQUIRE(variables.erase(name) == 1);
      auto message = invalidArgumentMessage(variables);
      REQUIRE(message);
      CHECK_THAT(*message, Catch::Contains(std::string(name) + " is not set"));
    }
  }
}

TEST_CASE("malformed values are named with the value", "[context]") {
  struct Case {
    const char* name;
    const char* value;
  };
  // fullEnvironment: WORLD_SIZE 8, LOCAL_WORLD_SIZE 4, GROUP_WORLD_SIZE 2.
  const Case cases[] = {
      {"RANK", "x"},
      {"RANK", ""},
      {"RANK", "1.5"},
      {"RANK", "-1"},
      {"RANK", "8"},  // == WORLD_SIZE
      {"RANK", "9"},
      {"RANK", " 1"},
      {"RANK", "1 "},
      {"RANK", "+1"},
      {"RANK", "0x1"},
      {"RANK", "99999999999999999999"},
      {"WORLD_SIZE", "0"},
      {"WORLD_SIZE", "-8"},
      {"WORLD_SIZE", "eight"},
      {"WORLD_SIZE", ""},
      {"LOCAL_RANK", "x"},
      {"LOCAL_RANK", "-1"},
      {"LOCAL_RANK", "1.5"},
      {"LOCAL_WORLD_SIZE", "0"},
      {"LOCAL_WORLD_SIZE", "x"},
      {"GROUP_RANK", "2"},  // == GROUP_WORLD_SIZE
      {"GROUP_RANK", "-1"},
      {"GROUP_WORLD_SIZE", "0"},
      {"TORCHELASTIC_RESTART_COUNT", "-1"},
      {"TORCHELASTIC_RESTART_COUNT", "x"},
      {"MASTER_PORT", "0"},
      {"MASTER_PORT", "70000"},
      {"MASTER_PORT", "65536"},
      {"MASTER_PORT", "-1"},
      {"MASTER_PORT", "http"},
      {"MASTER_PORT", ""},
      {"MASTER_PORT", "29500.0"},
  };
  for (const Case& c : cases) {
    INFO(c.name << "='" << c.value << "'");
    Variables variables = fullEnvironment();
    variables[c.name] = c.value;
    auto message = invalidArgumentMessage(variables);
    REQUIRE(message);
    CHECK_THAT(*message, Catch::Contains(std::string(c.name) + "='" + c.value + "'"));
  }
}

TEST_CASE("a local rank at or above LOCAL_WORLD_SIZE is named with both values", "[context]") {
  for (const char* localRank : {"4", "5", "100"}) {
    INFO("LOCAL_RANK " << localRank);
    Variables variables = fullEnvironment();  // LOCAL_WORLD_SIZE 4
    variables["LOCAL_RANK"] = localRank;
    auto message = invalidArgumentMessage(variables);
    REQUIRE(message);
    CHECK_THAT(*message,
               Catch::Contains(std::string("LOCAL_RANK=") + localRank) && Catch::Contains("LOCAL_WORLD_SIZE=4"));
  }
  Variables variables = fullEnvironment();
  variables["LOCAL_RANK"] = "3";
  CHECK(contextFrom(variables).localRank == 3);
}

TEST_CASE("the optional variables have defaults", "[context]") {
  const Context context = contextFrom(requiredOnly());
  CHECK(context.launched);
  CHECK(context.rank == 2);
  CHECK(context.localRank == 0);
  CHECK(context.worldSize == 4);
  CHECK(context.masterAddr == "node0");
  CHECK(context.masterPort == 1234);
  CHECK(context.localWorldSize == 1);
  CHECK(context.nodeRank == 0);
  CHECK(context.numNodes == 1);
  CHECK(context.restartCount == 0);
  CHECK(context.runId.empty());
  CHECK_FALSE(context.agentStore);
}

TEST_CASE("any one launcher variable means launched", "[context]") {
  for (const char* name : {"RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"}) {
    INFO("only " << name);
    Variables variables{{name, name == std::string("MASTER_ADDR") ? "host" : "1"}};
    // The others are then required: the error names one of them, never silently a world of one.
    auto message = invalidArgumentMessage(variables);
    REQUIRE(message);
    CHECK_THAT(*message, Catch::Contains("is not set"));
  }
}

TEST_CASE("TORCHELASTIC_USE_AGENT_STORE is true only when it says so", "[context]") {
  Variables variables = fullEnvironment();
  SECTION("True") { CHECK(contextFrom(variables).agentStore); }
  SECTION("true") {
    variables["TORCHELASTIC_USE_AGENT_STORE"] = "true";
    CHECK(contextFrom(variables).agentStore);
  }
  SECTION("False") {
    variables["TORCHELASTIC_USE_AGENT_STORE"] = "False";
    CHECK_FALSE(contextFrom(variables).agentStore);
  }
  SECTION("absent") {
    variables.erase("TORCHELASTIC_USE_AGENT_STORE");
    CHECK_FALSE(contextFrom(variables).agentStore);
  }
  SECTION("empty") {
    variables["TORCHELASTIC_USE_AGENT_STORE"] = "";
    CHECK_FALSE(contextFrom(variables).agentStore);
  }
  SECTION("0") {
    variables["TORCHELASTIC_USE_AGENT_STORE"] = "0";
    CHECK_FALSE(contextFrom(variables).agentStore);
  }
}

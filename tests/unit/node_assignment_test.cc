// Node ranks from the participants of a closed round: deterministic, hints honoured only
// when consistent, global ranks following node ranks.

#include "rendezvous/elastic/node_assignment.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "pltrun/error.h"
#include "rendezvous/elastic/round_end.h"

using namespace pltrun;
using namespace pltrun::rdzv;

namespace {

NodeDescriptor node(const std::string& id, const std::string& addr, int nproc = 2, std::optional<int> hint = {}) {
  NodeDescriptor descriptor;
  descriptor.agentId = id;
  descriptor.host = "host-" + id;
  descriptor.addr = addr;
  descriptor.localWorldSize = nproc;
  descriptor.rankHint = hint;
  return descriptor;
}

std::vector<int> nodeRanks(const AssignmentResult& result) {
  std::vector<int> ranks;
  for (const NodeAssignment& assignment : result.byParticipant) ranks.push_back(assignment.nodeRank);
  return ranks;
}

}  // namespace

TEST_CASE("node ranks follow (addr, agent id), whatever order the nodes joined in", "[rendezvous]") {
  std::vector<NodeDescriptor> joined = {node("c", "10.0.0.3"), node("a", "10.0.0.1"), node("b", "10.0.0.2")};
  AssignmentResult result = assignNodeRanks(joined);
  CHECK(nodeRanks(result) == std::vector<int>{2, 0, 1});
  CHECK(result.warning.empty());
  std::reverse(joined.begin(), joined.end());
  CHECK(nodeRanks(assignNodeRanks(joined)) == std::vector<int>{1, 0, 2});
}

TEST_CASE("global ranks are prefix sums of the workers of lower node ranks", "[rendezvous]") {
  AssignmentResult result =
      assignNodeRanks({node("b", "10.0.0.2", 3), node("a", "10.0.0.1", 2), node("c", "10.0.0.3", 4)});
  const auto& byParticipant = result.byParticipant;
  CHECK(byParticipant[1].firstRank == 0);  // a: node rank 0, 2 workers
  CHECK(byParticipant[0].firstRank == 2);  // b: node rank 1, 3 workers
  CHECK(byParticipant[2].firstRank == 5);  // c: node rank 2
  for (const NodeAssignment& assignment : byParticipant) {
    CHECK(assignment.worldSize == 9);
    CHECK(assignment.nnodes == 3);
    CHECK(assignment.rank0Addr == "10.0.0.1");
  }
}

TEST_CASE("consistent --node-rank hints are honoured and the rest fill the gaps", "[rendezvous]") {
  AssignmentResult result =
      assignNodeRanks({node("a", "10.0.0.1", 2, 2), node("b", "10.0.0.2"), node("c", "10.0.0.3", 2, 0)});
  CHECK(nodeRanks(result) == std::vector<int>{2, 1, 0});
  CHECK(result.warning.empty());
}

TEST_CASE("inconsistent hints are all ignored, with a warning that says why", "[rendezvous]") {
  SECTION("two nodes ask for the same rank") {
    AssignmentResult result = assignNodeRanks({node("a", "10.0.0.1", 2, 1), node("b", "10.0.0.2", 2, 1)});
    CHECK(nodeRanks(result) == std::vector<int>{0, 1});
    CHECK_THAT(result.warning, Catch::Contains("two nodes asked for node rank 1"));
  }
  SECTION("a negative hint") {
    AssignmentResult result = assignNodeRanks({node("a", "10.0.0.1", 2, -1), node("b", "10.0.0.2")});
    CHECK(nodeRanks(result) == std::vector<int>{0, 1});
    CHECK_THAT(result.warning, Catch::Contains("node rank -1"));
  }
  SECTION("a hint beyond the node count") {
    AssignmentResult result = assignNodeRanks({node("a", "10.0.0.1", 2, 5), node("b", "10.0.0.2")});
    CHECK(nodeRanks(result) == std::vector<int>{0, 1});
    CHECK_THAT(result.warning, Catch::Contains("node rank 5 but only 2 nodes joined"));
  }
}

TEST_CASE("descriptors and assignments survive their JSON form, bad JSON is a Protocol error", "[rendezvous]") {
  NodeDescriptor original = node("id-1", "::1", 8, 3);
  NodeDescriptor back = nodeDescriptorFromJson(toJson(original).dump());
  CHECK(back.agentId == "id-1");
  CHECK(back.addr == "::1");
  CHECK(back.localWorldSize == 8);
  CHECK(back.rankHint == std::optional<int>(3));
  NodeAssignment assignment{4, 5, 40, 32, "10.1.1.1"};
  NodeAssignment assignmentBack = nodeAssignmentFromJson(toJson(assignment).dump());
  CHECK(assignmentBack.nodeRank == 4);
  CHECK(assignmentBack.firstRank == 32);
  CHECK(assignmentBack.rank0Addr == "10.1.1.1");
  CHECK_THROWS_AS(nodeDescriptorFromJson("not json"), Error);
  CHECK_THROWS_AS(nodeDescriptorFromJson(R"({"id":"a","host":"h","addr":"x"})"), Error);
  CHECK_THROWS_AS(nodeDescriptorFromJson(R"({"id":"a","host":"h","addr":"x","nproc":0})"), Error);
  CHECK_THROWS_AS(nodeAssignmentFromJson(R"({"node_rank":"zero"})"), Error);
}

TEST_CASE("a round end survives its JSON form and says what happened", "[rendezvous]") {
  RoundEnd end;
  end.reason = RoundEnd::Reason::WorkerFailed;
  end.host = "node-b";
  end.message = "rank 3 ended with exit code 1";
  end.status = 1;
  end.failures = 2;
  end.final = true;
  RoundEnd back = RoundEnd::fromJson(end.toJson());
  CHECK(back.reason == RoundEnd::Reason::WorkerFailed);
  CHECK(back.host == "node-b");
  CHECK(back.status == 1);
  CHECK(back.failures == 2);
  CHECK(back.final);
  CHECK(back.describe() == "a worker failed on node-b: rank 3 ended with exit code 1");
  CHECK(std::string(RoundEnd::reasonName(RoundEnd::Reason::NodeLost)) == "node_lost");
  CHECK_THROWS_AS(RoundEnd::fromJson(R"({"reason":"bored"})"), Error);
  CHECK_THROWS_AS(RoundEnd::fromJson("[]"), Error);
}

TEST_CASE("a round end's restart cause survives its JSON form, and is absent where not said", "[rendezvous]") {
  RoundEnd end;
  end.reason = RoundEnd::Reason::WorkerFailed;
  end.cause = "stall";
  CHECK(nlohmann::json::parse(end.toJson())["cause"] == "stall");
  CHECK(RoundEnd::fromJson(end.toJson()).cause == "stall");
  end.cause.clear();
  CHECK_FALSE(nlohmann::json::parse(end.toJson()).contains("cause"));
  // An older agent's round end has none; one of another type is not said either.
  CHECK(RoundEnd::fromJson(R"({"reason":"worker_failed","host":"b"})").cause.empty());
  const RoundEnd odd = RoundEnd::fromJson(R"({"reason":"worker_failed","host":"b","cause":7})");
  CHECK(odd.cause.empty());
  CHECK(odd.reason == RoundEnd::Reason::WorkerFailed);
}

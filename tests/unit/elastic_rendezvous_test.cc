// The rendezvous protocol over the in-memory store, one thread per agent: the same code
// the launcher runs over TCP.

#include "rendezvous/elastic/elastic_rendezvous.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <future>
#include <set>
#include <thread>

#include "pltrun/error.h"
#include "pltrun/in_memory_store.h"
#include "rendezvous/elastic/node_assignment.h"

using namespace pltrun;
using namespace pltrun::rdzv;
using namespace std::chrono_literals;

namespace {

ElasticRendezvousOptions options(int minNodes, int maxNodes) {
  ElasticRendezvousOptions result;
  result.runId = "test";
  result.minNodes = minNodes;
  result.maxNodes = maxNodes;
  result.joinTimeout = 20s;
  result.lastCallTimeout = 300ms;
  result.closeTimeout = 5s;
  result.pollInterval = 20ms;
  return result;
}

NodeDescriptor self(int index) {
  NodeDescriptor node;
  node.agentId = "agent-" + std::to_string(index);
  node.host = "host-" + std::to_string(index);
  node.addr = "10.0.0." + std::to_string(index);
  node.localWorldSize = 2;
  return node;
}

// One agent: its own connection to the shared table, and its rendezvous.
struct Agent {
  std::unique_ptr<InMemoryStore> store;
  std::unique_ptr<ElasticRendezvous> rendezvous;
  Agent(const InMemoryStore& table, const ElasticRendezvousOptions& settings, int index)
      : store(table.connect()), rendezvous(std::make_unique<ElasticRendezvous>(*store, settings, self(index))) {}
};

std::vector<RoundInfo> joinAll(std::vector<std::unique_ptr<Agent>>& agents, int after = -1,
                               std::optional<int> expected = {}) {
  std::vector<std::future<RoundInfo>> joins;
  for (auto& agent : agents) {
    joins.push_back(std::async(std::launch::async,
                               [&agent, after, expected] { return agent->rendezvous->join(after, expected, {}); }));
  }
  std::vector<RoundInfo> infos;
  for (auto& join : joins) infos.push_back(join.get());
  return infos;
}

}  // namespace

TEST_CASE("MAX agents form a round at once, each with its own node rank", "[rendezvous]") {
  InMemoryStore table;
  std::vector<std::unique_ptr<Agent>> agents;
  for (int i = 0; i < 4; ++i) agents.push_back(std::make_unique<Agent>(table, options(2, 4), i));
  std::vector<RoundInfo> infos = joinAll(agents);
  std::set<int> nodeRanks, firstRanks;
  for (const RoundInfo& info : infos) {
    CHECK(info.round == 0);
    CHECK(info.assignment.nnodes == 4);
    CHECK(info.assignment.worldSize == 8);
    nodeRanks.insert(info.assignment.nodeRank);
    firstRanks.insert(info.assignment.firstRank);
  }
  CHECK(nodeRanks == std::set<int>{0, 1, 2, 3});
  CHECK(firstRanks == std::set<int>{0, 2, 4, 6});
}

TEST_CASE("MIN agents form a round after the last call, ranks stay when the same agents re-form", "[rendezvous]") {
  InMemoryStore table;
  std::vector<std::unique_ptr<Agent>> agents;
  for (int i = 0; i < 2; ++i) agents.push_back(std::make_unique<Agent>(table, options(2, 3), i));
  const auto start = std::chrono::steady_clock::now();
  std::vector<RoundInfo> first = joinAll(agents);
  CHECK(std::chrono::steady_clock::now() - start >= 300ms);  // the last call was waited out
  CHECK(first[0].assignment.nnodes == 2);

  RoundEnd failed;
  failed.host = "host-0";
  failed.message = "rank 1 ended with exit code 1";
  failed.status = 1;
  RoundEnd held = agents[0]->rendezvous->reportWorkerFailure(0, failed, 3);
  CHECK(held.reason == RoundEnd::Reason::WorkerFailed);
  CHECK(held.failures == 1);
  CHECK_FALSE(held.final);
  // A second report for the same round does not count again: the first end holds.
  CHECK(agents[1]->rendezvous->reportWorkerFailure(0, failed, 3).failures == 1);

  std::vector<RoundInfo> second = joinAll(agents, 0, 2);  // expected: 2, so no last call
  CHECK(second[0].round == 1);
  CHECK(second[0].failures == 1);
  CHECK(second[0].assignment.nodeRank == first[0].assignment.nodeRank);
  CHECK(second[1].assignment.nodeRank == first[1].assignment.nodeRank);
}

TEST_CASE("an agent whose connection closes ends the round for the others", "[rendezvous]") {
  InMemoryStore table;
  std::vector<std::unique_ptr<Agent>> agents;
  for (int i = 0; i < 3; ++i) agents.push_back(std::make_unique<Agent>(table, options(1, 3), i));
  joinAll(agents);
  Agent& watcher = *agents[0];
  const std::string endKey = watcher.rendezvous->key(pltrun::rdzv::layout::end(0));
  CHECK_FALSE(watcher.store->check({endKey}));
  agents.pop_back();  // its store connection closes, as when the agent is killed
  watcher.store->wait({endKey}, 2s);
  RoundEnd end = RoundEnd::fromJson(watcher.store->get(endKey));
  CHECK(end.reason == RoundEnd::Reason::NodeLost);
  CHECK(end.host == "host-2");

  std::vector<RoundInfo> survivors = joinAll(agents, 0, 2);
  CHECK(survivors[0].assignment.nnodes == 2);
  CHECK(survivors[0].assignment.worldSize == 4);
}

TEST_CASE("a node arriving at a running round below MAX makes it re-form with it", "[rendezvous]") {
  InMemoryStore table;
  std::vector<std::unique_ptr<Agent>> agents;
  for (int i = 0; i < 2; ++i) agents.push_back(std::make_unique<Agent>(table, options(2, 3), i));
  joinAll(agents);
  Agent late(table, options(2, 3), 7);
  auto lateJoin = std::async(std::launch::async, [&] { return late.rendezvous->join(-1, std::nullopt, {}); });
  agents[0]->store->wait({agents[0]->rendezvous->key(pltrun::rdzv::layout::end(0))}, 5s);
  RoundEnd end = RoundEnd::fromJson(agents[0]->store->get(agents[0]->rendezvous->key(pltrun::rdzv::layout::end(0))));
  CHECK(end.reason == RoundEnd::Reason::NodeJoined);
  std::vector<RoundInfo> others = joinAll(agents, 0, 3);
  RoundInfo newcomer = lateJoin.get();
  CHECK(newcomer.round == 1);
  CHECK(newcomer.assignment.nnodes == 3);
  CHECK(others[0].assignment.worldSize == 6);
}

TEST_CASE("too few nodes: the join times out, says how many are missing, and closes the job", "[rendezvous]") {
  InMemoryStore table;
  ElasticRendezvousOptions settings = options(3, 4);
  settings.joinTimeout = 300ms;
  Agent alone(table, settings, 0);
  try {
    alone.rendezvous->join(-1, std::nullopt, {});
    FAIL("join returned without enough nodes");
  } catch (const JobClosed& closed) {
    CHECK(closed.end.reason == RoundEnd::Reason::TimedOut);
    CHECK_THAT(closed.end.message, Catch::Contains("1 of at least 3 nodes") && Catch::Contains("(2 missing)"));
    CHECK(closed.end.status == 1);
  }
  // A latecomer learns at once that the job is over.
  Agent late(table, settings, 1);
  CHECK_THROWS_AS(late.rendezvous->join(-1, std::nullopt, {}), JobClosed);
}

TEST_CASE("with expected hosts, the join timeout and rR/missing name the nodes that never came", "[rendezvous]") {
  InMemoryStore table;
  ElasticRendezvousOptions settings = options(3, 4);
  settings.joinTimeout = 1500ms;
  settings.expectedHosts = {"host-0", "gpu-07", "host-1.cluster.local", "gpu-08"};
  Agent first(table, settings, 0);   // host-0: slot 1, keeps the roster
  Agent second(table, settings, 1);  // host-1: matches host-1.cluster.local by its short name
  auto firstJoin = std::async(std::launch::async, [&] { return first.rendezvous->join(-1, std::nullopt, {}); });
  // Slot 1 publishes who is missing while the round forms; the second joiner shrinks it.
  const std::string missingKey = first.rendezvous->key(pltrun::rdzv::layout::missing(0));
  first.store->wait({missingKey}, 5s);
  auto secondJoin = std::async(std::launch::async, [&] { return second.rendezvous->join(-1, std::nullopt, {}); });
  std::string published;
  for (int attempt = 0; attempt < 200; ++attempt) {
    published = first.store->get(missingKey);
    if (published == R"(["gpu-07","gpu-08"])") break;
    std::this_thread::sleep_for(10ms);
  }
  CHECK(published == R"(["gpu-07","gpu-08"])");
  for (auto* join : {&firstJoin, &secondJoin}) {
    try {
      join->get();
      FAIL("join returned without enough nodes");
    } catch (const JobClosed& closed) {
      CHECK(closed.end.reason == RoundEnd::Reason::TimedOut);
      CHECK_THAT(closed.end.message, Catch::Contains("2 of at least 3 nodes") &&
                                         Catch::Contains("(1 missing; not joined: gpu-07, gpu-08)"));
    }
  }
}

TEST_CASE("the last node to succeed ends the round and the job as succeeded", "[rendezvous]") {
  InMemoryStore table;
  std::vector<std::unique_ptr<Agent>> agents;
  for (int i = 0; i < 2; ++i) agents.push_back(std::make_unique<Agent>(table, options(2, 2), i));
  std::vector<RoundInfo> infos = joinAll(agents);
  agents[0]->rendezvous->reportSucceeded(infos[0]);
  CHECK_FALSE(agents[0]->store->check({agents[0]->rendezvous->key(pltrun::rdzv::layout::end(0))}));
  agents[1]->rendezvous->reportSucceeded(infos[1]);
  RoundEnd end = RoundEnd::fromJson(agents[0]->store->get(agents[0]->rendezvous->key(pltrun::rdzv::layout::end(0))));
  CHECK(end.reason == RoundEnd::Reason::Succeeded);
  Agent late(table, options(2, 2), 5);
  try {
    late.rendezvous->join(-1, std::nullopt, {});
    FAIL("joined a finished job");
  } catch (const JobClosed& closed) {
    CHECK(closed.end.reason == RoundEnd::Reason::Succeeded);
  }
}

TEST_CASE("the between-waits hook can abandon a join (a signal)", "[rendezvous]") {
  InMemoryStore table;
  Agent alone(table, options(2, 2), 0);
  struct Stop {};
  int calls = 0;
  CHECK_THROWS_AS(alone.rendezvous->join(-1, std::nullopt,
                                         [&] {
                                           if (++calls == 3) throw Stop{};
                                         }),
                  Stop);
  CHECK(calls == 3);
}

TEST_CASE("a spare waits while the members re-form after a failure, instead of taking a member's place",
          "[rendezvous]") {
  InMemoryStore table;
  std::vector<std::unique_ptr<Agent>> members;
  for (int i = 0; i < 2; ++i) members.push_back(std::make_unique<Agent>(table, options(2, 2), i));
  std::vector<RoundInfo> first = joinAll(members);
  Agent spare(table, options(2, 2), 9);
  auto spareJoin = std::async(std::launch::async, [&] { return spare.rendezvous->join(-1, std::nullopt, {}); });
  std::this_thread::sleep_for(100ms);  // the spare is waiting for a place now

  RoundEnd failed;
  failed.host = "host-0";
  failed.message = "rank 0 ended with exit code 1";
  failed.status = 1;
  members[0]->rendezvous->reportWorkerFailure(0, failed, 5);
  std::this_thread::sleep_for(100ms);  // members are slower to come back: they stop workers first
  std::vector<RoundInfo> second = joinAll(members, 0, 2);
  CHECK(second[0].round == 1);
  CHECK(second[0].assignment.nodeRank == first[0].assignment.nodeRank);
  CHECK(second[1].assignment.nodeRank == first[1].assignment.nodeRank);

  RoundEnd done;
  done.reason = RoundEnd::Reason::Succeeded;
  done.final = true;
  members[0]->rendezvous->closeJob(done);
  try {
    spareJoin.get();
    FAIL("the spare got a place in a full job");
  } catch (const JobClosed& closed) {
    CHECK(closed.end.reason == RoundEnd::Reason::Succeeded);
    CHECK_FALSE(closed.beforeJoining);  // it saw the job running: not a reused run id
  }
}

TEST_CASE("an agent that finds its run id already finished is told so", "[rendezvous]") {
  InMemoryStore table;
  Agent first(table, options(1, 1), 0);
  RoundEnd done;
  done.reason = RoundEnd::Reason::Succeeded;
  done.final = true;
  first.rendezvous->closeJob(done);
  Agent again(table, options(1, 1), 1);
  try {
    again.rendezvous->join(-1, std::nullopt, {});
    FAIL("joined a finished run");
  } catch (const JobClosed& closed) {
    CHECK(closed.beforeJoining);
  }
}

TEST_CASE("junk in the store's rendezvous keys is a clear error naming the key", "[rendezvous]") {
  InMemoryStore table;
  SECTION("a round marked complete with something that is not pltrun's JSON") {
    std::unique_ptr<InMemoryStore> writer = table.connect();
    writer->set("pltrun/rdzv/test/r0/complete", "\x1b[31mnot json");
    Agent agent(table, options(1, 1), 0);
    try {
      agent.rendezvous->join(-1, std::nullopt, {});
      FAIL("join accepted junk");
    } catch (const Error& error) {
      CHECK(error.code() == ErrorCode::Protocol);
      CHECK_THAT(error.what(), Catch::Contains("'pltrun/rdzv/test/r0/complete'"));
      CHECK_THAT(error.what(), Catch::Contains("\\x1b[31mnot json"));  // escaped, never raw
    }
  }
  SECTION("a round hint that is not a count") {
    std::unique_ptr<InMemoryStore> writer = table.connect();
    writer->set("pltrun/rdzv/test/round", "zero");
    Agent agent(table, options(1, 1), 0);
    try {
      agent.rendezvous->join(-1, std::nullopt, {});
      FAIL("join accepted junk");
    } catch (const Error& error) {
      CHECK_THAT(error.what(), Catch::Contains("'pltrun/rdzv/test/round'"));
    }
  }
}

TEST_CASE("worker counts that add up past the int range are refused, not wrapped", "[rendezvous]") {
  std::vector<NodeDescriptor> nodes(3);
  for (int i = 0; i < 3; ++i) {
    nodes[i].agentId = "a" + std::to_string(i);
    nodes[i].addr = "10.0.0." + std::to_string(i);
    nodes[i].localWorldSize = 1 << 30;
  }
  CHECK_THROWS_AS(assignNodeRanks(nodes), Error);
}

TEST_CASE("a job closed between rounds ends the next round for the agents waiting in it, who leave from there",
          "[rendezvous]") {
  InMemoryStore table;
  std::vector<std::unique_ptr<Agent>> members;
  for (int i = 0; i < 2; ++i) members.push_back(std::make_unique<Agent>(table, options(2, 2), i));
  const std::vector<RoundInfo> first = joinAll(members);
  // Agent 1 is already waiting for round 1 to form when agent 0 closes the job (as a
  // no-progress verdict does) instead of joining.
  auto waiting = std::async(std::launch::async, [&] {
    try {
      members[1]->rendezvous->join(first[1].round, 2, {});
      return std::string("joined");
    } catch (const JobClosed& closed) {
      members[1]->rendezvous->leave(*members[1]->rendezvous->lastMemberRound());
      return closed.end.message;
    }
  });
  while (table.connect()->add("pltrun/rdzv/test/r1/count", 0) < 1) std::this_thread::sleep_for(5ms);
  RoundEnd stopped;
  stopped.reason = RoundEnd::Reason::Stopped;
  stopped.host = "host-0";
  stopped.message = "no progress";
  stopped.status = 125;
  stopped.final = true;
  members[0]->rendezvous->closeJob(stopped);
  members[0]->rendezvous->endRound(first[0].round + 1, stopped);
  CHECK(waiting.get() == "no progress");
  CHECK(members[1]->rendezvous->lastMemberRound() == first[0].round + 1);
  // It left from round 1: the store's host, waiting for round 0's others, sees it at once.
  const auto started = std::chrono::steady_clock::now();
  members[0]->rendezvous->waitForOthersToLeave(first[0].round, 1, 30s);
  CHECK(std::chrono::steady_clock::now() - started < 10s);  // not the whole 30 s
}

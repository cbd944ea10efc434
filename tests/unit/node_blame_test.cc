// Blame per node (--max-node-blames, node_blame.h): which round ends count against this node
// and when it is excluded; and the exclusions key's lines (node_exclusions.h), as agents
// append them and `pltrun status` and failure.json read them.

#include "launcher/agent/node_blame.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <nlohmann/json.hpp>

#include "rendezvous/elastic/node_exclusions.h"

using namespace pltrun;
using Reason = rdzv::RoundEnd::Reason;

namespace {

rdzv::RoundEnd ended(Reason reason, const std::string& message = "rank 1 (local rank 1, pid 7) ended with exit code 3",
                     bool final = false) {
  rdzv::RoundEnd end;
  end.reason = reason;
  end.host = "bad";
  end.message = message;
  end.final = final;
  return end;
}

}  // namespace

TEST_CASE("node blame: K rounds in a row ended by this node's workers exclude it", "[node_blame]") {
  NodeBlame blame(2);
  CHECK_FALSE(blame.afterRound(0, ended(Reason::WorkerFailed), true, false, 3));
  CHECK(blame.blames() == 1);
  CHECK(blame.afterRound(1, ended(Reason::WorkerFailed, "rank 5 (local rank 1, pid 9) was killed by SIGSEGV"), true,
                         false, 3));
  CHECK(blame.blames() == 2);
  CHECK(blame.reason() ==
        "its workers ended 2 rounds in a row while the other nodes' ran (--max-node-blames 2); last, round 1: rank 5 "
        "(local rank 1, pid 9) was killed by SIGSEGV");
}

TEST_CASE("node blame: a failure on another node clears the count, nodes coming and going do not", "[node_blame]") {
  NodeBlame blame(2);
  CHECK_FALSE(blame.afterRound(0, ended(Reason::WorkerFailed), true, false, 2));
  CHECK_FALSE(blame.afterRound(1, ended(Reason::WorkerFailed), false, false, 2));  // another node's workers
  CHECK(blame.blames() == 0);
  CHECK_FALSE(blame.afterRound(2, ended(Reason::WorkerFailed), true, false, 2));
  CHECK_FALSE(blame.afterRound(3, ended(Reason::NodeJoined), false, false, 2));
  CHECK_FALSE(blame.afterRound(4, ended(Reason::NodeLost), false, false, 3));
  CHECK_FALSE(blame.afterRound(5, ended(Reason::RendezvousFailed), false, false, 2));
  CHECK(blame.blames() == 1);
  CHECK(blame.afterRound(6, ended(Reason::WorkerFailed), true, false, 2));
}

TEST_CASE("node blame: a round in which other nodes' workers failed too is not this node's alone", "[node_blame]") {
  NodeBlame blame(2);
  CHECK_FALSE(blame.afterRound(0, ended(Reason::WorkerFailed), true, false, 2));
  CHECK_FALSE(blame.afterRound(1, ended(Reason::WorkerFailed), true, true, 2));
  CHECK(blame.blames() == 0);
  CHECK_FALSE(blame.afterRound(2, ended(Reason::WorkerFailed), true, false, 2));
  CHECK(blame.afterRound(3, ended(Reason::WorkerFailed), true, false, 2));
}

TEST_CASE("node blame: a job of one node, the round that ends the job, and K = 0 exclude nobody", "[node_blame]") {
  NodeBlame alone(1);
  CHECK_FALSE(alone.afterRound(0, ended(Reason::WorkerFailed), true, false, 1));
  CHECK(alone.blames() == 0);
  NodeBlame last(1);
  CHECK_FALSE(last.afterRound(0, ended(Reason::WorkerFailed, "rank 0 ended with exit code 1", true), true, false, 2));
  NodeBlame never(0);
  for (int round = 0; round < 5; ++round)
    CHECK_FALSE(never.afterRound(round, ended(Reason::WorkerFailed), true, false, 2));
  CHECK(never.blames() == 5);
}

TEST_CASE("node blame: the store's message is shown within one line", "[node_blame]") {
  NodeBlame blame(1);
  CHECK(blame.afterRound(0, ended(Reason::WorkerFailed, "rank 0\n\x1b[2Jfake line"), true, false, 2));
  CHECK(blame.reason().find('\n') == std::string::npos);
  CHECK(blame.reason().find('\x1b') == std::string::npos);
}

TEST_CASE("exclusions: one JSON line per change, a node's last line its state", "[node_blame]") {
  const auto now = std::chrono::system_clock::from_time_t(1795336957);  // 2026-11-22T08:42:37Z
  const std::string line = rdzv::exclusionLine({"gpu-07", "blamed", true, "its workers ended 2 rounds", ""}, now);
  CHECK(line.back() == '\n');
  CHECK(std::count(line.begin(), line.end(), '\n') == 1);
  const nlohmann::json value = nlohmann::json::parse(line);
  CHECK(value == nlohmann::json{{"node", "gpu-07"},
                                {"kind", "blamed"},
                                {"excluded", true},
                                {"reason", "its workers ended 2 rounds"},
                                {"time", "2026-11-22T08:42:37Z"}});
  const std::string text = rdzv::exclusionLine({"gpu-03", "unhealthy", true, "GPU 1 lost", ""}, now) + line +
                           rdzv::exclusionLine({"gpu-03", "unhealthy", false, "healthy again", ""}, now) +
                           rdzv::exclusionLine({"gpu-09", "unhealthy", true, "ECC", ""}, now);
  const std::vector<rdzv::NodeExclusion> excluded = rdzv::excludedNodes(text);
  REQUIRE(excluded.size() == 2);
  CHECK(excluded[0].node == "gpu-07");
  CHECK(excluded[0].kind == "blamed");
  CHECK(excluded[0].time == "2026-11-22T08:42:37Z");
  CHECK(excluded[1].node == "gpu-09");
  CHECK(rdzv::excludedNodesJson(excluded) ==
        nlohmann::json::array(
            {{{"node", "gpu-07"},
              {"kind", "blamed"},
              {"reason", "its workers ended 2 rounds"},
              {"time", "2026-11-22T08:42:37Z"}},
             {{"node", "gpu-09"}, {"kind", "unhealthy"}, {"reason", "ECC"}, {"time", "2026-11-22T08:42:37Z"}}}));
}

TEST_CASE("exclusions: lines that are not an agent's are skipped, and texts made safe", "[node_blame]") {
  const std::string text =
      "not json\n"
      "[1, 2]\n"
      R"({"node": "", "kind": "blamed", "excluded": true})"
      "\n"
      R"({"node": "x", "kind": "evil", "excluded": true})"
      "\n"
      R"({"node": "y", "kind": "blamed", "excluded": "yes"})"
      "\n"
      R"({"node": "z\u001b[2J", "kind": "blamed", "excluded": true, "reason": "a\nb", "time": 5})"
      "\n"
      R"({"node": "cut", "kind": "blamed", "exc)";
  const std::vector<rdzv::NodeExclusion> excluded = rdzv::excludedNodes(text);
  REQUIRE(excluded.size() == 1);
  CHECK(excluded[0].node == "z\\x1b[2J");
  CHECK(excluded[0].reason == "a\\x0ab");
  CHECK(excluded[0].time.empty());
  CHECK(rdzv::excludedNodes("").empty());
}

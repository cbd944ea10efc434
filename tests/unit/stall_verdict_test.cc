// judgeStall: the culprit of a hang from every rank's progress counter, stack and silence,
// and the one line that says why; StallReport: that verdict as the console's summary and
// as JSON (failure.json, events.jsonl).

#include "launcher/stall/stall_verdict.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "launcher/group/failure_report.h"
#include "launcher/stall/stall_report.h"

using Catch::Matchers::Contains;
using pltrun::formatFailureReport;
using pltrun::judgeStall;
using pltrun::kStalledExitStatus;
using pltrun::RankEvidence;
using pltrun::rankListText;
using pltrun::StackSample;
using pltrun::StallReport;
using pltrun::StallVerdict;
using pltrun::WorkerFailure;

namespace {

StackSample inUserCode(const std::string& where) {
  StackSample stack;
  stack.kind = StackSample::Kind::Python;
  stack.where = where;
  stack.text =
      "Current thread 0x00007f3b3c1b2740 (most recent call first):\n  File \"/home/ada/train.py\", line 33 in "
      "train_step\n";
  return stack;
}

StackSample waitingIn(const std::string& collective) {
  StackSample stack;
  stack.kind = StackSample::Kind::Python;
  stack.where = "distributed_c10d.py:1536 in " + collective;
  stack.inCollective = true;
  stack.waitingIn = collective;
  stack.text =
      "Current thread 0x00007f3b3c1b2741 (most recent call first):\n  File "
      "\"/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py\", line 1536 in " +
      collective + "\n";
  return stack;
}

// `count` ranks on one host, every one stalled at step 41 with no stack (yet).
std::vector<RankEvidence> stalledRanks(int count) {
  std::vector<RankEvidence> ranks;
  for (int rank = 0; rank < count; ++rank) {
    RankEvidence evidence;
    evidence.rank = rank;
    evidence.host = "node-a";
    evidence.pid = 1000 + rank;
    evidence.counter = 41;
    evidence.silentSeconds = 4.1;
    evidence.stalled = true;
    ranks.push_back(evidence);
  }
  return ranks;
}

// The classic collective hang: rank 2 stays in user code, ranks 0, 1, 3 wait for it in all_reduce.
std::vector<RankEvidence> collectiveHang() {
  std::vector<RankEvidence> ranks = stalledRanks(4);
  for (RankEvidence& rank : ranks)
    rank.stack = rank.rank == 2 ? inUserCode("train.py:33 in train_step") : waitingIn("all_reduce");
  ranks[2].silentSeconds = 4.3;
  return ranks;
}

}  // namespace

TEST_CASE("stall verdict: rank lists read as one line, sorted", "[stall_verdict]") {
  CHECK(rankListText({2}) == "rank 2");
  CHECK(rankListText({3, 0, 1}) == "ranks 0, 1, 3");
}

TEST_CASE("stall verdict: when counters differ, the ranks with the lowest are the culprits", "[stall_verdict]") {
  std::vector<RankEvidence> ranks = stalledRanks(4);
  ranks[1].counter = 40;
  ranks[3].counter = 40;
  ranks[0].counter = std::nullopt;  // a rank that sent no counter is not behind
  // Counters win over stacks: the ranks behind are the culprits even where stacks say otherwise.
  for (RankEvidence& rank : ranks) rank.stack = waitingIn("all_reduce");
  const StallVerdict verdict = judgeStall(ranks);
  CHECK(verdict.culprits == std::vector<int>{1, 3});
  CHECK(verdict.why == "ranks 1, 3 are behind: progress counter 40 where the others reached 41");

  ranks[3].counter = 41;
  CHECK(judgeStall(ranks).why == "rank 1 is behind: progress counter 40 where the others reached 41");
}

TEST_CASE("stall verdict: equal counters, the rank outside the collective is the culprit", "[stall_verdict]") {
  const StallVerdict verdict = judgeStall(collectiveHang());
  CHECK(verdict.culprits == std::vector<int>{2});
  CHECK_THAT(verdict.why, Contains("rank 2 is in train.py:33 in train_step"));
  CHECK_THAT(verdict.why, Contains("ranks 0, 1, 3 wait in all_reduce"));
  CHECK(verdict.why == "rank 2 is in train.py:33 in train_step; ranks 0, 1, 3 wait in all_reduce");
}

TEST_CASE("stall verdict: several ranks outside, waiters in different collectives", "[stall_verdict]") {
  std::vector<RankEvidence> ranks = collectiveHang();
  ranks[0].stack = inUserCode("data.py:88 in load_batch");
  ranks[3].stack = waitingIn("backward");
  const StallVerdict verdict = judgeStall(ranks);
  CHECK(verdict.culprits == std::vector<int>{0, 2});
  CHECK_THAT(verdict.why, Contains("rank 0 is in data.py:88 in load_batch; rank 2 is in train.py:33 in train_step"));
  CHECK_THAT(verdict.why, Contains("ranks 1, 3 wait in all_reduce, backward"));
}

TEST_CASE("stall verdict: a stopped rank among waiters is the culprit", "[stall_verdict]") {
  std::vector<RankEvidence> ranks = stalledRanks(4);
  for (RankEvidence& rank : ranks) rank.stack = waitingIn("all_reduce");
  ranks[1].stack = pltrun::stoppedStackSample('T');
  const StallVerdict verdict = judgeStall(ranks);
  CHECK(verdict.culprits == std::vector<int>{1});
  CHECK_THAT(verdict.why, Contains("rank 1 is stopped (SIGSTOP or SIGTSTP)"));
  CHECK_THAT(verdict.why, Contains("ranks 0, 2, 3 wait in all_reduce"));
}

TEST_CASE("stall verdict: without counters or stacks, the ranks that went silent while others beat",
          "[stall_verdict]") {
  std::vector<RankEvidence> ranks = stalledRanks(4);
  for (RankEvidence& rank : ranks) {
    rank.counter = std::nullopt;
    rank.stalled = false;
    rank.silentSeconds = 0.2;
  }
  ranks[3].stalled = true;
  ranks[3].silentSeconds = 12.0;
  ranks[1].silentSeconds = std::nullopt;  // never beat: neither culprit nor witness
  const StallVerdict verdict = judgeStall(ranks);
  CHECK(verdict.culprits == std::vector<int>{3});
  CHECK(verdict.why == "rank 3 stopped sending heartbeats while the others still send them");
}

TEST_CASE("stall verdict: when nothing tells the ranks apart it names no culprit and says so", "[stall_verdict]") {
  SECTION("every rank stalled at the same step, no stacks") {
    const StallVerdict verdict = judgeStall(stalledRanks(4));
    CHECK(verdict.culprits.empty());
    CHECK_THAT(verdict.why, Contains("cannot tell"));
  }
  SECTION("every rank waits in the same collective") {
    std::vector<RankEvidence> ranks = stalledRanks(3);
    for (RankEvidence& rank : ranks) rank.stack = waitingIn("all_reduce");
    const StallVerdict verdict = judgeStall(ranks);
    CHECK(verdict.culprits.empty());
    CHECK_THAT(verdict.why, Contains("cannot tell"));
  }
  SECTION("only kernel stacks") {
    std::vector<RankEvidence> ranks = stalledRanks(2);
    ranks[0].stack = pltrun::kernelStackSample("futex_wait_queue", "");
    ranks[1].stack = pltrun::kernelStackSample("0", "");
    CHECK(judgeStall(ranks).culprits.empty());
  }
  SECTION("no ranks") { CHECK(judgeStall({}).culprits.empty()); }
}

TEST_CASE("stall report: the summary names the stalled ranks, the timeout and the culprit", "[stall_report]") {
  StallReport report;
  report.attempt = 1;
  report.host = "node-a";
  report.timeoutText = "4.0 s";
  report.ranks = collectiveHang();
  report.verdict = judgeStall(report.ranks);
  CHECK(report.summary() ==
        "ranks 0, 1, 2, 3 stalled (no heartbeat for 4.3 s, --stall-timeout 4.0 s); culprit: rank 2 is in "
        "train.py:33 in train_step; ranks 0, 1, 3 wait in all_reduce");

  report.ranks = stalledRanks(2);
  report.verdict = judgeStall(report.ranks);
  CHECK_THAT(report.summary(), Contains("culprit: unknown, cannot tell"));
}

TEST_CASE("stall report: the console shows every rank's line and the culprit's stack only", "[stall_report]") {
  StallReport report;
  report.attempt = 2;
  report.host = "node-a";
  report.timeoutText = "auto (60.0 s)";
  report.ranks = collectiveHang();
  report.verdict = judgeStall(report.ranks);
  const std::string text = report.text();
  CHECK(text.rfind("pltrun: stall detected on node-a, attempt 2: ranks 0, 1, 2, 3 stalled", 0) == 0);
  CHECK_THAT(text, Contains("rank 2 (pid 1002 on node-a): step 41, last heartbeat 4.3 s ago (stalled); at "
                            "train.py:33 in train_step"));
  CHECK_THAT(text, Contains("rank 0 (pid 1000 on node-a): step 41, last heartbeat 4.1 s ago (stalled); waits in "
                            "all_reduce at distributed_c10d.py:1536 in all_reduce"));
  CHECK_THAT(text, Contains("    Current thread 0x00007f3b3c1b2740"));  // the culprit's stack, indented
  CHECK_THAT(text, !Contains("Current thread 0x00007f3b3c1b2741"));     // the waiters' only in the JSON
}

TEST_CASE("stall report: a rank whose sampler was late says why it has no stack, on the console and in the JSON",
          "[stall_report]") {
  StallReport report;
  report.host = "node-a";
  report.timeoutText = "1.0 s";
  report.ranks = collectiveHang();
  report.ranks[2].stack = pltrun::kernelStackSample("do_sys_poll", "");
  report.ranks[2].stack.noStack = "eu-stack did not answer within 0.5 s";
  report.verdict = judgeStall(report.ranks);
  CHECK_THAT(report.text(), Contains("rank 2 (pid 1002 on node-a): step 41, last heartbeat 4.3 s ago (stalled); no "
                                     "stack: eu-stack did not answer within 0.5 s; at kernel wait in do_sys_poll"));
  const nlohmann::json json = report.json();
  CHECK(json["ranks"][2]["no_stack"] == "eu-stack did not answer within 0.5 s");
  CHECK(json["ranks"][1]["no_stack"].is_null());
}

TEST_CASE("stall report: the JSON has the verdict and every rank's evidence", "[stall_report]") {
  StallReport report;
  report.attempt = 1;
  report.host = "node-a";
  report.timeoutText = "4.0 s";
  report.timeoutSeconds = 4.0;
  report.ranks = collectiveHang();
  report.ranks[0].counter = std::nullopt;
  report.ranks[0].silentSeconds = std::nullopt;
  report.ranks[0].stalled = false;
  report.verdict = judgeStall(report.ranks);
  const nlohmann::json json = report.json();
  CHECK(json["attempt"] == 1);
  CHECK(json["host"] == "node-a");
  CHECK(json["stall_timeout_s"] == 4.0);
  CHECK(json["culprits"] == nlohmann::json::array({2}));
  CHECK(json["why"] == report.verdict.why);
  CHECK(json["summary"] == report.summary());
  REQUIRE(json["ranks"].size() == 4);

  const nlohmann::json& culprit = json["ranks"][2];
  CHECK(culprit["rank"] == 2);
  CHECK(culprit["host"] == "node-a");
  CHECK(culprit["pid"] == 1002);
  CHECK(culprit["counter"] == 41);
  CHECK(culprit["silent_seconds"] == 4.3);
  CHECK(culprit["stalled"] == true);
  CHECK(culprit["stack_kind"] == "python");
  CHECK(culprit["where"] == "train.py:33 in train_step");
  CHECK(culprit["in_collective"] == false);
  CHECK(culprit["waiting_in"] == "");
  CHECK(culprit["stack"] == report.ranks[2].stack.text);

  const nlohmann::json& waiter = json["ranks"][1];
  CHECK(waiter["in_collective"] == true);
  CHECK(waiter["waiting_in"] == "all_reduce");

  const nlohmann::json& silent = json["ranks"][0];  // never beat, no counter: nulls, not zeros
  CHECK(silent["counter"].is_null());
  CHECK(silent["silent_seconds"].is_null());
  CHECK(silent["stalled"] == false);

  StallReport empty;
  CHECK(empty.json()["ranks"].is_array());
  CHECK(empty.json()["culprits"].is_array());
}

TEST_CASE("stall verdict: a lone worker that waits for no one is the culprit, one in a collective is not",
          "[stall_verdict]") {
  std::vector<RankEvidence> alone = stalledRanks(1);
  alone[0].stack = inUserCode("train.py:33 in train_step");
  const StallVerdict verdict = judgeStall(alone);
  CHECK(verdict.culprits == std::vector<int>{0});
  CHECK(verdict.why == "rank 0 is the only worker here, in train.py:33 in train_step");

  std::vector<RankEvidence> waiting = stalledRanks(1);
  waiting[0].stack = waitingIn("all_reduce");  // its peers are on other nodes
  CHECK(judgeStall(waiting).culprits.empty());
}

TEST_CASE("stall report: with no culprit the failure report says the root cause is only the first stalled rank",
          "[stall_report]") {
  WorkerFailure failure;
  failure.rank = 0;
  failure.host = "node-a";
  StallReport report;
  report.timeoutText = "4.0 s";
  report.ranks = stalledRanks(2);
  report.verdict = judgeStall(report.ranks);
  REQUIRE(report.verdict.culprits.empty());
  failure.stall = report;
  CHECK_THAT(formatFailureReport(failure, {}),
             Contains("pltrun: stalled ranks (no culprit could be named; root cause: the first stalled rank)"));
  CHECK(failure.shellStatus() == kStalledExitStatus);
}

namespace {

// Rank `rank` on node-b, as its agent published it: `silent` seconds after its last heartbeat.
RankEvidence publishedByNodeB(int rank, long long counter, double silent) {
  RankEvidence evidence;
  evidence.rank = rank;
  evidence.host = "node-b";
  evidence.counter = counter;
  evidence.silentSeconds = silent;
  evidence.onOtherNode = true;
  return evidence;
}

}  // namespace

TEST_CASE("stall verdict: a rank behind on another node is the culprit once its silence has settled",
          "[stall_verdict]") {
  // Node a's ranks 0 and 1 wait at step 41; node b published rank 2 at 40 and rank 3 at 41.
  std::vector<RankEvidence> ranks = stalledRanks(2);
  for (RankEvidence& rank : ranks) rank.stack = waitingIn("all_reduce");
  ranks.push_back(publishedByNodeB(2, 40, 3.5));
  ranks.push_back(publishedByNodeB(3, 41, 3.0));
  StallVerdict verdict = judgeStall(ranks);
  CHECK(verdict.culprits == std::vector<int>{2});
  CHECK(verdict.why == "rank 2 is behind: progress counter 40 where the others reached 41");

  // Published 1.5 s after a heartbeat: it may have counted on since, so its counter is not
  // compared, nor does it still beat for sure: nothing here tells who caused it.
  ranks[2].silentSeconds = 1.5;
  verdict = judgeStall(ranks);
  CHECK(verdict.culprits.empty());
}

TEST_CASE("stall verdict: another node's ranks that still beat make this node's silent ranks the culprits",
          "[stall_verdict]") {
  std::vector<RankEvidence> ranks = stalledRanks(2);
  ranks[0].counter = std::nullopt;
  ranks[1].counter = std::nullopt;
  ranks.push_back(publishedByNodeB(2, 7, 0.2));
  StallVerdict verdict = judgeStall(ranks);
  CHECK(verdict.culprits == std::vector<int>{0, 1});
  CHECK_THAT(verdict.why, Contains("stopped sending heartbeats while the others still send them"));

  // Silent for 1.5 s when published: not evidence either way.
  ranks[2].silentSeconds = 1.5;
  CHECK(judgeStall(ranks).culprits.empty());
}

TEST_CASE("stall verdict: a node's lone worker is still the culprit beside other nodes' ranks", "[stall_verdict]") {
  std::vector<RankEvidence> ranks = stalledRanks(1);
  ranks[0].stack = inUserCode("train.py:33 in train_step");
  ranks.push_back(publishedByNodeB(1, 41, 0.5));  // still counting: not compared
  const StallVerdict verdict = judgeStall(ranks);
  CHECK(verdict.culprits == std::vector<int>{0});
}

TEST_CASE("stall report: another node's ranks are shown as published, without pid or stack", "[stall_report]") {
  StallReport report;
  report.host = "node-a";
  report.timeoutText = "4.0 s";
  report.ranks = stalledRanks(1);
  report.ranks.push_back(publishedByNodeB(1, 40, 3.0));
  report.verdict = judgeStall(report.ranks);
  CHECK_THAT(report.text(), Contains("rank 1 (on node-b, as its node published it): step 40, last heartbeat 3"));
  CHECK(report.json()["ranks"][1]["on_other_node"] == true);
  CHECK(report.json()["ranks"][0]["on_other_node"] == false);
  // The summary counts this node's stalled ranks only: the other node judges its own.
  CHECK_THAT(report.summary(), Contains("rank 0 stalled"));
}

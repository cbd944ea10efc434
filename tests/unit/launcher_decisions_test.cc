// The supervisor's and the elastic agent's decisions, as pure functions: restart or stop
// and with which status (decideAfterAttempt), go on or end after a round and how many
// nodes to expect (decideAfterRound), a closed job's status, the signal a stop reports.

#include <signal.h>

#include <catch2/catch.hpp>

#include "launcher/agent/agent_decisions.h"
#include "launcher/static_job/supervisor.h"

using namespace pltrun;
using Reason = rdzv::RoundEnd::Reason;
using namespace std::chrono_literals;

namespace {

WorkerFailure failureOf(int rank, int exitCode, int signal = 0) {
  WorkerFailure failure;
  failure.rank = rank;
  failure.end.exitCode = exitCode;
  failure.end.signal = signal;
  return failure;
}

GroupOutcome failed(WorkerFailure rootCause) {
  GroupOutcome outcome;
  outcome.kind = GroupOutcome::Kind::Failed;
  outcome.rootCause = rootCause;
  return outcome;
}

GroupOutcome interrupted(int signal, std::optional<WorkerFailure> rootCause = std::nullopt) {
  GroupOutcome outcome;
  outcome.kind = GroupOutcome::Kind::Interrupted;
  outcome.interruptSignal = signal;
  outcome.rootCause = rootCause;
  return outcome;
}

rdzv::RoundEnd roundEnd(Reason reason, bool final = false, int status = 0) {
  rdzv::RoundEnd end;
  end.reason = reason;
  end.final = final;
  end.status = status;
  return end;
}

}  // namespace

TEST_CASE("decideAfterAttempt: success finishes with 0, with no report", "[decisions]") {
  const AfterAttempt next = decideAfterAttempt(GroupOutcome{}, 2, 3);
  CHECK(next.action == AfterAttempt::Action::Finish);
  CHECK(next.status == 0);
  CHECK_FALSE(next.reportFailure);
}

TEST_CASE("decideAfterAttempt: a failure restarts while restarts are left, then reports the root cause's status",
          "[decisions]") {
  const GroupOutcome outcome = failed(failureOf(3, 7));
  for (int attempt = 0; attempt < 3; ++attempt) {
    CAPTURE(attempt);
    CHECK(decideAfterAttempt(outcome, attempt, 3).action == AfterAttempt::Action::Restart);
  }
  const AfterAttempt last = decideAfterAttempt(outcome, 3, 3);
  CHECK(last.action == AfterAttempt::Action::Finish);
  CHECK(last.status == 7);
  CHECK(last.reportFailure);
  // --max-restarts 0: the first failure is the last; a signal's status is 128 + it.
  const AfterAttempt killed = decideAfterAttempt(failed(failureOf(0, 0, SIGKILL)), 0, 0);
  CHECK(killed.action == AfterAttempt::Action::Finish);
  CHECK(killed.status == 128 + SIGKILL);
}

TEST_CASE("decideAfterAttempt: an interruption finishes with 128 + the signal and never restarts", "[decisions]") {
  const AfterAttempt plain = decideAfterAttempt(interrupted(SIGINT), 0, 5);
  CHECK(plain.action == AfterAttempt::Action::Finish);
  CHECK(plain.status == 128 + SIGINT);
  CHECK_FALSE(plain.reportFailure);
  // A failure that came before the signal is still reported; the status is the signal's.
  const AfterAttempt afterFailure = decideAfterAttempt(interrupted(SIGTERM, failureOf(1, 3)), 0, 5);
  CHECK(afterFailure.status == 128 + SIGTERM);
  CHECK(afterFailure.reportFailure);
}

TEST_CASE("decideAfterRound: success and final ends finish the job, with their exit barriers", "[decisions]") {
  const AfterRound succeeded = decideAfterRound(roundEnd(Reason::Succeeded), 3, 4, 30s);
  CHECK(succeeded.finished);
  CHECK(succeeded.status == 0);
  CHECK(succeeded.exitBarrier == 30s);

  const AfterRound failedJob = decideAfterRound(roundEnd(Reason::WorkerFailed, true, 9), 3, 4, 30s);
  CHECK(failedJob.finished);
  CHECK(failedJob.status == 9);
  CHECK(failedJob.exitBarrier == kFailureExitBarrier);
  // A final end without a status still fails.
  CHECK(decideAfterRound(roundEnd(Reason::Stopped, true, 0), 3, 4, 30s).status == 1);
  CHECK(decideAfterRound(roundEnd(Reason::TimedOut, true, 0), 3, 4, 30s).finished);
}

TEST_CASE("decideAfterRound: other ends re-form the job, expecting the nodes that remain", "[decisions]") {
  const AfterRound lost = decideAfterRound(roundEnd(Reason::NodeLost), 3, 4, 30s);
  CHECK_FALSE(lost.finished);
  CHECK(lost.expectedNodes == 2);
  CHECK(decideAfterRound(roundEnd(Reason::NodeJoined), 3, 4, 30s).expectedNodes == 4);
  CHECK(decideAfterRound(roundEnd(Reason::NodeJoined), 4, 4, 30s).expectedNodes == 4);  // never past the maximum
  CHECK(decideAfterRound(roundEnd(Reason::WorkerFailed), 3, 4, 30s).expectedNodes == 3);
  CHECK(decideAfterRound(roundEnd(Reason::RendezvousFailed), 3, 4, 30s).expectedNodes == 3);
}

TEST_CASE("closedJobStatus and stopSignal", "[decisions]") {
  CHECK(closedJobStatus(roundEnd(Reason::Succeeded, true), false) == 0);
  CHECK(closedJobStatus(roundEnd(Reason::Succeeded, true), true) == 1);  // a reused run id
  CHECK(closedJobStatus(roundEnd(Reason::WorkerFailed, true, 5), false) == 5);
  CHECK(closedJobStatus(roundEnd(Reason::TimedOut, true, 0), false) == 1);

  CHECK(stopSignal(SIGINT, interrupted(SIGTERM)) == SIGINT);  // what this agent received
  CHECK(stopSignal(0, interrupted(SIGHUP)) == SIGHUP);
  CHECK(stopSignal(0, std::nullopt) == SIGTERM);
  CHECK(stopSignal(0, GroupOutcome{}) == SIGTERM);
}

TEST_CASE("the other nodes' published ranks are a stall's evidence, their host names kept within the line", "[agent]") {
  rdzv::NodeState plain;
  plain.state = "running";
  plain.host = "node-b";
  plain.ranks = {{2, 40, 0.5, std::nullopt}, {3, std::nullopt, std::nullopt, std::nullopt}};
  rdzv::NodeState forged = plain;
  forged.host = "node-c\n[rank 9] forged\x1b[2J";
  forged.ranks = {{4, 7, 3.0, std::nullopt}};
  const std::vector<RankEvidence> ranks = otherNodesEvidence({plain, forged});
  REQUIRE(ranks.size() == 3);
  CHECK(ranks[0].rank == 2);
  CHECK(ranks[0].host == "node-b");
  CHECK(ranks[0].counter == 40);
  CHECK(ranks[0].silentSeconds == 0.5);
  CHECK(ranks[0].onOtherNode);
  CHECK_FALSE(ranks[1].counter);
  CHECK(ranks[2].host == "node-c\\x0a[rank 9] forged\\x1b[2J");
}

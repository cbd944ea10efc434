// The restart cause every agent counts for a round's end (round_end_cause.h): the one the
// failed worker's node wrote, else the reason's; a cause from the store that names none is
// not believed.

#include "launcher/metrics/round_end_cause.h"

#include <catch2/catch.hpp>
#include <string>

using namespace pltrun;
using Reason = rdzv::RoundEnd::Reason;

namespace {

rdzv::RoundEnd roundEnd(Reason reason, const std::string& cause = "") {
  rdzv::RoundEnd end;
  end.reason = reason;
  end.cause = cause;
  return end;
}

}  // namespace

TEST_CASE("round end cause: the written cause wins, whatever the reason", "[metrics]") {
  CHECK(restartCauseOfRoundEnd(roundEnd(Reason::WorkerFailed, "exit")) == RestartCause::Exit);
  CHECK(restartCauseOfRoundEnd(roundEnd(Reason::WorkerFailed, "signal")) == RestartCause::Signal);
  CHECK(restartCauseOfRoundEnd(roundEnd(Reason::WorkerFailed, "stall")) == RestartCause::Stall);
  CHECK(restartCauseOfRoundEnd(roundEnd(Reason::WorkerFailed, "timer")) == RestartCause::Timer);
  CHECK(restartCauseOfRoundEnd(roundEnd(Reason::RendezvousFailed, "health")) == RestartCause::Health);
  // Through the JSON the store holds, as another agent reads it.
  const rdzv::RoundEnd written = roundEnd(Reason::WorkerFailed, "stall");
  CHECK(restartCauseOfRoundEnd(rdzv::RoundEnd::fromJson(written.toJson())) == RestartCause::Stall);
}

TEST_CASE("round end cause: without one, the reason's, and an unknown cause is not believed", "[metrics]") {
  CHECK(restartCauseOfRoundEnd(roundEnd(Reason::NodeLost)) == RestartCause::NodeLost);
  CHECK(restartCauseOfRoundEnd(roundEnd(Reason::NodeJoined)) == RestartCause::NodeJoined);
  CHECK(restartCauseOfRoundEnd(roundEnd(Reason::WorkerFailed)) == RestartCause::Other);  // an older agent's
  CHECK(restartCauseOfRoundEnd(roundEnd(Reason::RendezvousFailed)) == RestartCause::Other);
  CHECK(restartCauseOfRoundEnd(roundEnd(Reason::NodeLost, "EXIT")) == RestartCause::NodeLost);
  CHECK(restartCauseOfRoundEnd(roundEnd(Reason::NodeJoined, "exit\n# TYPE x counter")) == RestartCause::NodeJoined);
}

TEST_CASE("round end cause: only a round the job goes on from restarts the workers", "[metrics]") {
  CHECK(roundEndRestarts(roundEnd(Reason::WorkerFailed)));
  CHECK(roundEndRestarts(roundEnd(Reason::NodeLost)));
  CHECK(roundEndRestarts(roundEnd(Reason::NodeJoined)));
  CHECK(roundEndRestarts(roundEnd(Reason::RendezvousFailed)));
  CHECK_FALSE(roundEndRestarts(roundEnd(Reason::Succeeded)));
  rdzv::RoundEnd last = roundEnd(Reason::WorkerFailed);
  last.final = true;
  CHECK_FALSE(roundEndRestarts(last));
}

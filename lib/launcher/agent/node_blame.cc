#include "launcher/agent/node_blame.h"

#include "base/terminal_text.h"

namespace pltrun {

using Reason = rdzv::RoundEnd::Reason;

bool NodeBlame::afterRound(int round, const rdzv::RoundEnd& end, bool reportedHere, bool othersFailed, int nnodes) {
  if (end.reason != Reason::WorkerFailed || end.final) return false;
  if (!reportedHere || othersFailed) {
    blames_ = 0;
    return false;
  }
  // Alone, a node has no healthy others to compare with: its failures are the job's.
  if (nnodes < 2) return false;
  ++blames_;
  lastRound_ = round;
  lastFailure_ = terminalSafeLine(end.message);
  return maxBlames_ > 0 && blames_ >= maxBlames_;
}

std::string NodeBlame::reason() const {
  return "its workers ended " + std::to_string(blames_) + " round" + (blames_ == 1 ? "" : "s") +
         " in a row while the other nodes' ran (--max-node-blames " + std::to_string(maxBlames_) + "); last, round " +
         std::to_string(lastRound_) + ": " + lastFailure_;
}

}  // namespace pltrun

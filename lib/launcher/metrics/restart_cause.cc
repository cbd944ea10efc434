#include "launcher/metrics/restart_cause.h"

#include "launcher/group/failure_report.h"

namespace pltrun {

const char* restartCauseName(RestartCause cause) {
  switch (cause) {
    case RestartCause::Exit:
      return "exit";
    case RestartCause::Signal:
      return "signal";
    case RestartCause::Stall:
      return "stall";
    case RestartCause::Timer:
      return "timer";
    case RestartCause::NodeLost:
      return "node_lost";
    case RestartCause::NodeJoined:
      return "node_joined";
    case RestartCause::Health:
      return "health";
    case RestartCause::Other:
      return "other";
  }
  return "other";
}

std::optional<RestartCause> restartCauseFromName(const std::string& name) {
  for (RestartCause cause : kRestartCauses) {
    if (name == restartCauseName(cause)) return cause;
  }
  return std::nullopt;
}

RestartCause restartCauseOf(const WorkerFailure& failure) {
  // The order of WorkerFailure::describe(): a stalled worker and one its FileTimer killed
  // both end by a signal, which is then how they were stopped, not why.
  if (failure.stall) return RestartCause::Stall;
  if (!failure.expiredTimer.empty()) return RestartCause::Timer;
  return failure.end.signal != 0 ? RestartCause::Signal : RestartCause::Exit;
}

}  // namespace pltrun

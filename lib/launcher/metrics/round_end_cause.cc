#include "launcher/metrics/round_end_cause.h"

namespace pltrun {

using Reason = rdzv::RoundEnd::Reason;

RestartCause restartCauseOfRoundEnd(const rdzv::RoundEnd& end) {
  if (std::optional<RestartCause> written = restartCauseFromName(end.cause)) return *written;
  switch (end.reason) {
    case Reason::NodeLost:
      return RestartCause::NodeLost;
    case Reason::NodeJoined:
      return RestartCause::NodeJoined;
    default:
      return RestartCause::Other;
  }
}

bool roundEndRestarts(const rdzv::RoundEnd& end) { return !end.final && end.reason != Reason::Succeeded; }

}  // namespace pltrun

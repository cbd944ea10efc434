#pragma once
// The restart cause of an elastic round's end, as every agent of the round counts it in
// `pltrun_restarts_total{cause}`: the cause the node whose worker failed wrote (RoundEnd's
// `cause`), else what the round end's reason tells. Pure.

#include "launcher/metrics/restart_cause.h"
#include "rendezvous/elastic/round_end.h"

namespace pltrun {

/// `end.cause` when it names a cause (the store's word: any other text is ignored); else
/// NodeLost and NodeJoined from their reasons, and Other for the rest (an older agent's
/// worker failure, a round that could not be formed). Health exclusions end no round of
/// their own: an unhealthy node stays out before it joins, a blamed one leaves after the
/// round its worker ended (counted by that worker's cause), and the next round forms
/// without either; so Health comes only from a written cause.
RestartCause restartCauseOfRoundEnd(const rdzv::RoundEnd& end);

/// Whether `end` restarts the workers (the round loop goes on): not the job's end, nor the
/// success of every node.
bool roundEndRestarts(const rdzv::RoundEnd& end);

}  // namespace pltrun

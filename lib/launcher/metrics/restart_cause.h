#pragma once
// Why a job restarted its workers, as `pltrun_restarts_total{cause=...}` counts it: the
// single node's root cause (a WorkerFailure), or an elastic round's end (RoundEnd, whose
// `cause` the node that saw the failure writes, so that every node counts the same cause).

#include <optional>
#include <string>

namespace pltrun {

struct WorkerFailure;

enum class RestartCause {
  Exit,        ///< a worker exited with a non-zero code
  Signal,      ///< a worker was killed by a signal it was not sent by pltrun
  Stall,       ///< --stall-timeout: ranks stopped beating
  Timer,       ///< torch's FileTimer killed a worker
  NodeLost,    ///< elastic: an agent's connection closed or its heartbeats stopped
  NodeJoined,  ///< elastic: a new node joined (scale-up re-forms the round)
  Health,      ///< a node's health checks failed or it was blamed and excluded (issue 46)
  Other,       ///< anything else (a failed rendezvous, an older agent's round end)
};

/// Every cause, in the order the metrics list them (each is exposed from 0).
inline constexpr RestartCause kRestartCauses[] = {
    RestartCause::Exit,     RestartCause::Signal,     RestartCause::Stall,  RestartCause::Timer,
    RestartCause::NodeLost, RestartCause::NodeJoined, RestartCause::Health, RestartCause::Other};

/// The label value: "exit", "signal", "stall", "timer", "node_lost", "node_joined",
/// "health", "other".
const char* restartCauseName(RestartCause cause);
/// The cause a label value names; none for any other text (a round end from the store is
/// untrusted).
std::optional<RestartCause> restartCauseFromName(const std::string& name);

/// The cause of a root-cause failure: its stall, else its expired FileTimer, else how the
/// process ended (a signal or an exit code).
RestartCause restartCauseOf(const WorkerFailure& failure);

}  // namespace pltrun

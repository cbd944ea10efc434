#pragma once
// Why a rendezvous round ended, as every agent of the round reads it from the store
// (readable JSON under r<ROUND>/end, written once: the first writer wins).

#include <string>

namespace pltrun::rdzv {

struct RoundEnd {
  enum class Reason {
    Succeeded,         ///< every node's workers succeeded: the job is over
    WorkerFailed,      ///< a worker failed on some node
    NodeLost,          ///< an agent's connection closed, or its heartbeats stopped
    NodeJoined,        ///< a new node wants in (scale-up)
    Stopped,           ///< an agent was told to stop (a signal): the job is over
    RendezvousFailed,  ///< the round could not be formed (a node vanished while it closed)
    TimedOut,          ///< too few nodes joined in time: the job is over
  };
  Reason reason = Reason::Succeeded;
  std::string host;     ///< the node concerned (the failed, lost, joined or stopped one)
  std::string message;  ///< for people, e.g. "rank 3 ended with exit code 1"
  int status = 0;       ///< the shell status the job ends with, when it ends
  int failures = 0;     ///< WorkerFailed: worker failures so far in the job, this one included
  bool final = false;   ///< no further round: the job ends with `status`
  /// Why the workers restart, as `pltrun_restarts_total{cause}` names it ("exit", "stall",
  /// ...; metrics/restart_cause.h): written by the node whose worker failed, so that every
  /// node counts the same cause. Empty: not said (an older agent, or a round end of another
  /// reason); in the JSON as "cause" when not empty.
  std::string cause;

  std::string toJson() const;
  /// Throws Error(Protocol) when `text` is not a round end.
  static RoundEnd fromJson(const std::string& text);
  /// The round end the store holds at `key`; a malformed one (a wrong type, another
  /// program's value) ends the round all the same, as a failed rendezvous whose message
  /// names the key: the agents meet again in a new round rather than abort.
  static RoundEnd fromStoreValue(const std::string& key, const std::string& text);
  /// One line, e.g. "node b lost (connection closed)".
  std::string describe() const;
  /// The event name, e.g. "worker_failed".
  static const char* reasonName(Reason reason);
};

}  // namespace pltrun::rdzv

#pragma once
// What a node's workers are doing, as its agent publishes it under rR/state/I for
// `pltrun status` and for the stall verdicts of the other nodes (elastic_rendezvous.h):
//   {"state": "running", "workers": 2, "host": "b",
//    "ranks": [{"rank": 2, "step": 5, "silent": 3.2, "step_s": 0.21}, ...],
//    "goodput": {"productive_s": 50.0, "elapsed_s": 60.5, "lost_s": 8.0}}
// The store's values are not trusted: decoding keeps what has the right shape and drops the
// rest, entry by entry, and never throws.

#include <optional>
#include <string>
#include <vector>

namespace pltrun::rdzv {

/// One worker's heartbeats (PLTRUN_HEARTBEAT), as its agent publishes them.
struct RankProgress {
  int rank = 0;
  std::optional<long long> step;        ///< its last progress counter
  std::optional<double> silentSeconds;  ///< since its last heartbeat; none: it never sent one
  /// Seconds per step, the median of its recent steps (issue 47: JobMetrics::stepSeconds);
  /// published as "step_s"; none before it has one.
  std::optional<double> stepSeconds;
};

/// This node's goodput (issue 47: job_metrics.h defines it), published as "goodput":
/// {"productive_s", "elapsed_s", "lost_s"}.
struct NodeGoodput {
  double productiveSeconds = 0;
  double elapsedSeconds = 0;
  double lostSeconds = 0;  ///< over every restart so far
  /// productive / elapsed; 0 before any time has passed.
  double ratio() const { return elapsedSeconds > 0 ? productiveSeconds / elapsedSeconds : 0; }
};

struct NodeState {
  std::string state;  ///< "running", "failed" or "succeeded"
  int workers = -1;   ///< workers running; -1: not said
  std::string host;   ///< the agent's host name (empty from agents older than this field)
  std::vector<RankProgress> ranks;
  std::optional<NodeGoodput> goodput;  ///< none: an older agent, or not measured yet
};

std::string encodeNodeState(const NodeState& state);

/// None when `text` is not a JSON object with a non-empty "state" string, or its "workers"
/// is there but neither a count from 0 nor -1 (not said). Rank entries of
/// the wrong shape are left out; a step that is not an integer, or a silence or step time
/// that is not a finite number of seconds from 0 up, reads as absent; so does a goodput
/// with any of its three figures missing or not such a number.
std::optional<NodeState> decodeNodeState(const std::string& text);

}  // namespace pltrun::rdzv

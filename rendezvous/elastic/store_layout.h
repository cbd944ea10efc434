#pragma once
// Every key an elastic job keeps in the store, in one place: the rendezvous, the agents,
// the driver's start-up lines and `pltrun status` name keys only through these functions.
// Names are relative to the job's prefix, jobKeyPrefix(RUN_ID) = "pltrun/rdzv/RUN_ID/" (on
// etcd under etcd_prefix), as `pltrun status` reads them. Values are readable text and
// JSON, never pickle; each round costs O(nodes) bytes in all, and each agent reads O(1) keys
// of it; node rank 0 of round R deletes round R-2's keys once its workers run (keysOfRound),
// so the store holds three rounds. kLayout below says what each key holds; a unit test
// checks that every key built here matches one of its rows.
//
// Ranks are deterministic (see assignNodeRanks), so an unchanged membership keeps them.

#include <optional>
#include <string>
#include <vector>

namespace pltrun::rdzv {

/// Where a job's keys live in the store.
std::string jobKeyPrefix(const std::string& runId);

namespace layout {

/// One row of the layout: a key's pattern (R: a round, I: a slot, 1-based) and its value.
struct KeyRow {
  const char* pattern;
  const char* holds;
};

inline constexpr KeyRow kLayout[] = {
    {"round", "the newest round anyone joined (a hint for newcomers), decimal"},
    {"failures", "worker failures so far in the job (counted against --max-restarts): ADD counter"},
    {"closed", "set once the job is over: a RoundEnd with the job's final status"},
    {"exclusions",
     "the nodes kept out of the job (issue 46), appended one JSON line per change: {\"node\": host name, "
     "\"kind\": \"unhealthy\" (its health checks fail; it checks again) or \"blamed\" (its workers ended "
     "K rounds in a row: out for the rest of the run), \"excluded\": true|false, \"reason\": one line, "
     "\"time\": ISO 8601}; a node's last line is its state"},
    {"rR/count", "ADD counter: the slot of each joiner, 1, 2, ..."},
    {"rR/slot/I", "NodeDescriptor of the joiner in slot I"},
    {"rR/closing", "the agent that closes the round (compare-and-set lock)"},
    {"rR/assign/I", "NodeAssignment of slot I, written by the closer"},
    {"rR/complete", "{\"nnodes\": N, \"world_size\": W, \"failures\": F}: the round is formed"},
    {"rR/missing",
     "the expected nodes not joined yet (JSON array of names), kept by slot 1 while the round forms, "
     "where the job expects named nodes"},
    {"rR/end",
     "RoundEnd: why the round is over (first writer wins); every agent of the round leaves a close "
     "notice here, so its death ends the round"},
    {"rR/beat/I", "heartbeat counter of slot I (see RoundWatcher): ADD counter"},
    {"rR/state/I",
     "what slot I's workers are doing (node_state.h), for `pltrun status` and the other nodes' stall "
     "verdicts: {\"state\", \"workers\", \"host\", \"goodput\": {\"productive_s\", \"elapsed_s\", "
     "\"lost_s\"}, and while they run \"ranks\": [{\"rank\", \"step\", \"silent\", \"step_s\"}]}"},
    {"rR/master_port", "the port of the round's workers' store, published by node rank 0, decimal"},
    {"rR/done", "ADD counter: nodes whose workers succeeded"},
    {"rR/left", "ADD counter: agents that passed the exit barrier"},
};

// The job's own keys.
inline const std::string kRound = "round";
inline const std::string kFailures = "failures";
inline const std::string kClosed = "closed";
inline const std::string kExclusions = "exclusions";

// A round's keys.
std::string roundPrefix(int round);  ///< "rR/"
std::string count(int round);
std::string slot(int round, int slot);
std::string closing(int round);
std::string assign(int round, int slot);
std::string complete(int round);
std::string missing(int round);
std::string end(int round);
std::string beat(int round, int slot);
std::string state(int round, int slot);
std::string masterPort(int round);
std::string done(int round);
std::string left(int round);

/// The slot of `name` when it is `round`'s beat(round, I), else none.
std::optional<int> beatSlot(int round, const std::string& name);

/// Every key of `round` whose slots are 1..`slots`, its count last: what forgetting the
/// round deletes (while the count exists, a failed pass can be done again).
std::vector<std::string> keysOfRound(int round, int slots);

}  // namespace layout
}  // namespace pltrun::rdzv

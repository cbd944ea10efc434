#pragma once
// `pltrun status`, the pure half: what an elastic job is doing, worked out from the keys its
// agents keep in the rendezvous store (docs/ELASTIC.md, "Keys"), and how that is shown to
// people (text) and to scripts (JSON, schema 1). The keys are read by job_keys.h; nothing
// here does I/O, so every state can be tested from a table of keys.

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "rendezvous/elastic/node_exclusions.h"
#include "rendezvous/elastic/node_state.h"
#include "rendezvous/elastic/round_end.h"

namespace pltrun {

/// The job's keys under pltrun/rdzv/RUN_ID/, by their name below it ("round", "r2/slot/1").
using JobKeys = std::map<std::string, std::string>;

/// The most slots of a round status reads and shows: a count in the store is the store's
/// word (any client with the secret may write 1e9 there), and each slot costs four reads.
constexpr int kMaxStatusSlots = 4096;

/// Per slot of the current round: seconds since its heartbeat counter was last seen to move
/// (measured by the reader's own clock: the counters hold no time).
using HeartbeatAges = std::map<int, double>;

struct NodeStatus {
  int slot = 0;
  int nodeRank = -1;  ///< -1: not placed (the round is still forming, or a spare)
  std::string host;
  /// node_name= (Slurm's node name, the driver's host entry), which the metrics' `node` label
  /// and the exclusions use; empty: its host name.
  std::string name;
  std::string address;
  int pid = 0;  ///< 0: not told (an older agent)
  int firstRank = -1;
  int workers = 0;
  int workersRunning = -1;  ///< -1: not told yet
  std::optional<double> heartbeatAge;
  std::string state;  ///< joined, running, succeeded, failed, silent (no heartbeat of late), spare
  /// Its slowest worker, from the heartbeats its agent publishes (PLTRUN_HEARTBEAT): the
  /// lowest progress counter, or else the longest silence. None while no worker sent one.
  std::optional<int> slowestRank;
  std::optional<long long> slowestStep;
  std::optional<double> slowestSilence;  ///< seconds since that worker's heartbeat, when published
  /// Seconds per step of each rank that has one (the median of its recent steps), by rank.
  std::map<int, double> stepSeconds;
  /// Its goodput (job_metrics.h defines it), as its agent last published it.
  std::optional<rdzv::NodeGoodput> goodput;
};

/// The job's goodput as its nodes published it: the lowest node's ratio (productive over
/// elapsed seconds) and the most seconds any node lost to restarts (restarts are the job's:
/// every node measures the same ones).
struct JobGoodput {
  double ratio = 0;
  double lostSeconds = 0;
};

struct JobStatus {
  enum class State { Unknown, Waiting, Running, Reforming, Finished };
  State state = State::Unknown;
  std::string runId;
  std::string endpoint;
  int round = 0;  ///< also the restart count (TORCHELASTIC_RESTART_COUNT)
  std::optional<int> maxRestarts;
  std::optional<int> keepAliveMs;  ///< the agents' heartbeat interval, as their descriptors tell it
  int workerFailures = 0;
  std::optional<int> minNodes;
  std::optional<int> maxNodes;
  int joined = 0;  ///< nodes in the round (while waiting: so far)
  std::vector<NodeStatus> nodes;
  std::vector<NodeStatus> spares;
  std::vector<std::string> missing;   ///< while waiting or re-forming: last round's nodes not back yet
  std::optional<rdzv::RoundEnd> end;  ///< why the round or the job ended
  /// The nodes kept out (the exclusions key): unhealthy ones, and those blamed for rounds.
  std::vector<rdzv::NodeExclusion> excluded;
  int exitStatus = 0;  ///< Finished: the status the job ended with
  /// Keys whose values are not what pltrun writes there (a wrong type, another program's
  /// value) where the state depends on them: the state cannot be known (exit status 2).
  std::vector<std::string> malformedKeys;
  bool slotsCut = false;  ///< a round claimed more than kMaxStatusSlots slots
};

/// The decimal value of key `name`, or `fallback` when it is missing or not a number.
int keyInteger(const JobKeys& keys, const std::string& name, int fallback);
/// keyInteger of a slot count, at most kMaxStatusSlots.
int slotCount(const JobKeys& keys, const std::string& name);

/// The job as `keys` show it. A running node whose heartbeat has not moved for 1.5 times the
/// agents' keep-alive interval (they beat once an interval) is "silent".
JobStatus evaluateJob(const std::string& runId, const std::string& endpoint, const JobKeys& keys,
                      const HeartbeatAges& ages);

/// None while no node of the round published its goodput.
std::optional<JobGoodput> jobGoodput(const JobStatus& status);

/// 0: running with every node well, or finished successfully; 1: waiting, re-forming, or a
/// node failed or went silent; 2: failed, stopped, no such job, or malformed keys.
int statusExitCode(const JobStatus& status);

/// For people: a summary line, then a table of nodes, spares and who is missing.
std::string renderStatusText(const JobStatus& status);
/// For scripts: schema 1 (docs/STATUS.md).
nlohmann::json statusJson(const JobStatus& status);

const char* stateName(JobStatus::State state);

}  // namespace pltrun

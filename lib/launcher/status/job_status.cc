#include "launcher/status/job_status.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <set>
#include <sstream>

#include "base/printable_key.h"
#include "base/seconds_text.h"
#include "base/terminal_text.h"
#include "launcher/status/impossible_values.h"
#include "pltrun/error.h"
#include "rendezvous/elastic/expected_nodes.h"
#include "rendezvous/elastic/node_assignment.h"
#include "rendezvous/elastic/node_state.h"
#include "rendezvous/elastic/store_layout.h"

namespace pltrun {

namespace layout = rdzv::layout;

namespace {

using nlohmann::json;
using rdzv::RoundEnd;

std::optional<std::string> valueOf(const JobKeys& keys, const std::string& name) {
  auto found = keys.find(name);
  if (found == keys.end()) return std::nullopt;
  return found->second;
}

json parsedOr(const std::optional<std::string>& text) {
  if (!text) return json();
  json value = json::parse(*text, nullptr, false);
  return value.is_discarded() ? json() : value;
}

// The slowest of a node's workers in its published ranks (node_state.h, rR/state/I): the
// lowest step, the longest silence among equals; without steps, the longest silence.
void readSlowestRank(const std::vector<rdzv::RankProgress>& ranks, NodeStatus& node) {
  for (const rdzv::RankProgress& entry : ranks) {
    if (!entry.silentSeconds) continue;  // never sent a heartbeat
    const bool slower = !node.slowestRank || (entry.step && (!node.slowestStep || *entry.step < *node.slowestStep)) ||
                        (entry.step == node.slowestStep && *entry.silentSeconds > node.slowestSilence.value_or(0));
    if (!slower) continue;
    node.slowestRank = entry.rank;
    node.slowestStep = entry.step;
    node.slowestSilence = entry.silentSeconds;
  }
}

// Notes that `name` holds a value no pltrun agent writes there (once).
void noteMalformed(JobStatus& job, const std::string& name) {
  if (std::find(job.malformedKeys.begin(), job.malformedKeys.end(), name) == job.malformedKeys.end()) {
    job.malformedKeys.push_back(name);
  }
}

// The value of `name` as `decode` reads it, when `impossible` finds nothing wrong with it;
// none when it is not there, and none, noted, when it is not pltrun's.
template <typename Value, typename Decode, typename Impossible>
std::optional<Value> plausibleValue(const JobKeys& keys, const std::string& name, JobStatus& job, Decode decode,
                                    Impossible impossible) {
  const std::optional<std::string> text = valueOf(keys, name);
  if (!text) return std::nullopt;
  try {
    std::optional<Value> value = decode(*text);
    if (value && !impossible(*value)) return value;
  } catch (const Error&) {
  }
  noteMalformed(job, name);
  return std::nullopt;
}

// The settings of the job as a node's descriptor tells them, where none told them before.
void readJobSettings(const rdzv::NodeDescriptor& descriptor, JobStatus& job) {
  if (descriptor.maxNodes != 0 && !job.maxNodes) {
    job.minNodes = descriptor.minNodes;
    job.maxNodes = descriptor.maxNodes;
  }
  if (descriptor.maxRestarts >= 0 && !job.maxRestarts) job.maxRestarts = descriptor.maxRestarts;
  if (descriptor.keepAliveMs != 0 && !job.keepAliveMs) job.keepAliveMs = descriptor.keepAliveMs;
}

// Slot `slot` of `round` as far as the keys tell: who joined, where it was placed (in a round
// of `nnodes` nodes, when formed), what its workers do. Empty when the slot's descriptor is
// not there (yet) or not pltrun's; a placement or a state that is not pltrun's is left out.
std::optional<NodeStatus> nodeInSlot(const JobKeys& keys, int round, int slot, std::optional<int> nnodes,
                                     JobStatus& job) {
  const auto descriptor = plausibleValue<rdzv::NodeDescriptor>(
      keys, layout::slot(round, slot), job, [](const std::string& text) { return rdzv::nodeDescriptorFromJson(text); },
      [](const rdzv::NodeDescriptor& value) { return impossibleDescriptor(value); });
  if (!descriptor) return std::nullopt;
  NodeStatus node;
  node.slot = slot;
  node.host = descriptor->host;
  node.name = descriptor->name;
  node.address = descriptor->addr;
  node.pid = descriptor->pid;
  node.workers = descriptor->localWorldSize;
  node.state = "joined";
  readJobSettings(*descriptor, job);
  const auto assignment = plausibleValue<rdzv::NodeAssignment>(
      keys, layout::assign(round, slot), job,
      [](const std::string& text) { return rdzv::nodeAssignmentFromJson(text); },
      [&](const rdzv::NodeAssignment& value) { return impossibleAssignment(value, node.workers, nnodes); });
  if (assignment) {
    node.nodeRank = assignment->nodeRank;
    node.firstRank = assignment->firstRank;
  }
  const auto state = plausibleValue<rdzv::NodeState>(
      keys, layout::state(round, slot), job, [](const std::string& text) { return rdzv::decodeNodeState(text); },
      [&](const rdzv::NodeState& value) { return impossibleNodeState(value, node.workers, node.firstRank); });
  if (state) {
    node.state = state->state;
    node.workersRunning = state->workers;
    readSlowestRank(state->ranks, node);
    for (const rdzv::RankProgress& rank : state->ranks) {
      if (rank.stepSeconds) node.stepSeconds[rank.rank] = *rank.stepSeconds;
    }
    node.goodput = state->goodput;
  }
  return node;
}

// The members of a formed round (slots 1..nnodes) with their heartbeats; spares after them.
void readFormedRound(const JobKeys& keys, int round, int nnodes, const HeartbeatAges& ages, JobStatus& job) {
  const int joined =
      valueOf(keys, layout::count(round)) ? slotCount(keys, layout::count(round)) : std::min(nnodes, kMaxStatusSlots);
  // A round cut at kMaxStatusSlots may have more nodes than its assignments are checked against.
  const std::optional<int> checkedNodes = nnodes < kMaxStatusSlots ? std::optional<int>(nnodes) : std::nullopt;
  for (int slot = 1; slot <= joined; ++slot) {
    std::optional<NodeStatus> node = nodeInSlot(keys, round, slot, checkedNodes, job);
    if (!node) continue;
    if (slot > nnodes) {
      node->state = "spare";
      job.spares.push_back(*node);
    } else {
      job.nodes.push_back(*node);
    }
  }
  // The keep-alive interval is known once the descriptors are read.
  const double silentAfter = 1.5 * job.keepAliveMs.value_or(5000) / 1000.0;
  for (NodeStatus& node : job.nodes) {
    auto age = ages.find(node.slot);
    if (age != ages.end()) node.heartbeatAge = age->second;
    if (node.state == "running" && node.heartbeatAge && *node.heartbeatAge > silentAfter) node.state = "silent";
  }
  std::sort(job.nodes.begin(), job.nodes.end(),
            [](const NodeStatus& a, const NodeStatus& b) { return a.nodeRank < b.nodeRank; });
  job.joined = static_cast<int>(job.nodes.size());
}

// The expected nodes not joined yet, as the round's slot 1 publishes them (rR/missing)
// where the job expects named nodes. Not a list of names, or a name no node has: noted.
std::optional<std::vector<std::string>> publishedMissing(const JobKeys& keys, int round, JobStatus& job) {
  return plausibleValue<std::vector<std::string>>(
      keys, layout::missing(round), job, [](const std::string& text) { return rdzv::nodeNamesFromJson(text); },
      [](const std::vector<std::string>& names) { return std::any_of(names.begin(), names.end(), impossibleName); });
}

// The nodes of a formed round, from its rR/complete; none while it forms, or when the value
// is not pltrun's (no round is formed of no node).
std::optional<int> formedNodes(const JobKeys& keys, int round) {
  const json complete = parsedOr(valueOf(keys, layout::complete(round)));
  if (!complete.is_object()) return std::nullopt;
  const auto nnodes = complete.find("nnodes");
  if (nnodes == complete.end() || !nnodes->is_number_integer() || nnodes->get<long long>() < 1) return std::nullopt;
  return static_cast<int>(std::min<long long>(nnodes->get<long long>(), kMaxStatusSlots));
}

// The round end at `name` ("closed", "r3/end"): one that is not pltrun's is noted.
std::optional<RoundEnd> readRoundEnd(const JobKeys& keys, const std::string& name, JobStatus& job) {
  const std::optional<std::string> text = valueOf(keys, name);
  if (!text) return std::nullopt;
  try {
    return RoundEnd::fromJson(*text);
  } catch (const Error&) {
    noteMalformed(job, name);
    return std::nullopt;
  }
}

// The job's counters (round, failures, rR/count) as the agents keep them: decimal counts
// from 0. Any other value is noted.
void checkCounter(const JobKeys& keys, const std::string& name, JobStatus& job) {
  const std::optional<std::string> text = valueOf(keys, name);
  if (!text) return;
  long long value = -1;
  const char* end = text->data() + text->size();
  const auto [stop, error] = std::from_chars(text->data(), end, value);
  if (error != std::errc() || stop != end || value < 0) noteMalformed(job, name);
}

// While a round forms: who joined so far, and who is missing: the expected nodes not joined
// where the job names them, else the members of the round before that are not back
// (counted by host and address: a replacement agent on the same node counts as back).
void readFormingRound(const JobKeys& keys, int round, JobStatus& job) {
  const int joined = slotCount(keys, layout::count(round));
  std::multiset<std::string> here;
  for (int slot = 1; slot <= joined; ++slot) {
    if (std::optional<NodeStatus> node = nodeInSlot(keys, round, slot, std::nullopt, job)) {
      here.insert(node->host + " " + node->address);
      job.nodes.push_back(*node);
    }
  }
  job.joined = joined;
  if (std::optional<std::vector<std::string>> named = publishedMissing(keys, round, job)) {
    job.missing = std::move(*named);
    return;
  }
  if (round == 0) return;
  const int members = formedNodes(keys, round - 1).value_or(0);
  for (int slot = 1; slot <= members; ++slot) {
    std::optional<NodeStatus> node = nodeInSlot(keys, round - 1, slot, std::nullopt, job);
    if (!node) continue;
    auto back = here.find(node->host + " " + node->address);
    if (back == here.end()) {
      job.missing.push_back(node->host);
    } else {
      here.erase(back);
    }
  }
}

}  // namespace

std::optional<JobGoodput> jobGoodput(const JobStatus& status) {
  std::optional<JobGoodput> job;
  for (const NodeStatus& node : status.nodes) {
    if (!node.goodput) continue;
    const double ratio = node.goodput->ratio();
    if (!job) job = JobGoodput{ratio, 0};
    job->ratio = std::min(job->ratio, ratio);
    job->lostSeconds = std::max(job->lostSeconds, node.goodput->lostSeconds);
  }
  return job;
}

int slotCount(const JobKeys& keys, const std::string& name) {
  return std::clamp(keyInteger(keys, name, 0), 0, kMaxStatusSlots);
}

int keyInteger(const JobKeys& keys, const std::string& name, int fallback) {
  auto text = valueOf(keys, name);
  if (!text) return fallback;
  try {
    return std::stoi(*text);
  } catch (const std::exception&) {
    return fallback;
  }
}

JobStatus evaluateJob(const std::string& runId, const std::string& endpoint, const JobKeys& keys,
                      const HeartbeatAges& ages) {
  JobStatus job;
  job.runId = runId;
  job.endpoint = endpoint;
  if (!valueOf(keys, "round")) return job;  // Unknown: no agent ever joined this run id here
  job.round = std::max(0, keyInteger(keys, "round", 0));
  job.workerFailures = keyInteger(keys, "failures", 0);
  const std::optional<std::string> closed = valueOf(keys, "closed");
  const std::optional<std::string> ended = valueOf(keys, layout::end(job.round));
  const std::optional<int> formed = formedNodes(keys, job.round);
  if (!formed && valueOf(keys, layout::complete(job.round))) noteMalformed(job, layout::complete(job.round));
  for (const std::string& counter :
       {layout::kRound, layout::kFailures, layout::count(job.round), layout::count(std::max(job.round - 1, 0))}) {
    checkCounter(keys, counter, job);
  }
  job.end = readRoundEnd(keys, closed ? layout::kClosed : layout::end(job.round), job);
  job.slotsCut = keyInteger(keys, layout::count(job.round), 0) > kMaxStatusSlots;
  job.excluded = rdzv::excludedNodes(valueOf(keys, layout::kExclusions).value_or(""));
  if (formed) {
    readFormedRound(keys, job.round, *formed, ages, job);
  } else {
    readFormingRound(keys, job.round, job);
  }
  if (closed) {
    job.state = JobStatus::State::Finished;
    job.exitStatus = !job.end ? 1 : job.end->reason == RoundEnd::Reason::Succeeded ? 0 : std::max(job.end->status, 1);
  } else if (ended || (!formed && job.round > 0 && valueOf(keys, layout::end(job.round - 1)))) {
    job.state = JobStatus::State::Reforming;  // the last round ended; the next one forms
  } else {
    job.state = formed ? JobStatus::State::Running : JobStatus::State::Waiting;
  }
  return job;
}

int statusExitCode(const JobStatus& status) {
  if (!status.malformedKeys.empty()) return 2;
  switch (status.state) {
    case JobStatus::State::Unknown:
      return 2;
    case JobStatus::State::Finished:
      return status.exitStatus == 0 ? 0 : 2;
    case JobStatus::State::Waiting:
    case JobStatus::State::Reforming:
      return 1;
    case JobStatus::State::Running:
      break;
  }
  for (const NodeStatus& node : status.nodes) {
    if (node.state == "failed" || node.state == "silent") return 1;
  }
  return 0;
}

namespace {

std::string nodeRange(const JobStatus& status) {
  if (!status.maxNodes) return "";
  if (*status.minNodes == *status.maxNodes) return " of " + std::to_string(*status.maxNodes);
  return " of " + std::to_string(*status.minNodes) + ".." + std::to_string(*status.maxNodes);
}

std::string summaryLine(const JobStatus& status) {
  std::ostringstream line;
  line << "run " << terminalSafeLine(status.runId) << " at " << terminalSafeLine(status.endpoint) << ": ";
  switch (status.state) {
    case JobStatus::State::Unknown:
      line << "no such job (no agent has joined this run id at this endpoint)";
      break;
    case JobStatus::State::Waiting:
      line << "waiting for nodes in round " << status.round << ": " << status.joined << nodeRange(status) << " joined";
      if (status.minNodes && status.joined < *status.minNodes) {
        line << " (" << *status.minNodes - status.joined << " missing to start)";
      }
      break;
    case JobStatus::State::Running:
      line << "running round " << status.round << " on " << status.joined << " node(s)" << nodeRange(status);
      break;
    case JobStatus::State::Reforming:
      line << "re-forming in round " << status.round << (status.end ? " after " + status.end->describe() : "");
      break;
    case JobStatus::State::Finished:
      line << "finished with status " << status.exitStatus << (status.end ? ": " + status.end->describe() : "");
      break;
  }
  if (status.state != JobStatus::State::Unknown) {
    // The restart budget is spent by worker failures; rounds also change when nodes come and go.
    line << "; " << status.workerFailures << " worker failure(s)";
    if (status.maxRestarts) line << " of --max-restarts " << *status.maxRestarts;
  }
  return line.str();
}

std::string ranksText(const NodeStatus& node) {
  if (node.firstRank < 0) return "-";
  if (node.workers == 1) return std::to_string(node.firstRank);
  return std::to_string(node.firstRank) + "-" + std::to_string(node.firstRank + node.workers - 1);
}

std::string heartbeatText(const NodeStatus& node) {
  if (!node.heartbeatAge) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s ago", *node.heartbeatAge);
  return text;
}

// "rank 5, step 120, 0.4 s ago", or "-" while no worker of the node sent a heartbeat.
std::string slowestText(const NodeStatus& node) {
  if (!node.slowestRank) return "-";
  char text[96];
  std::snprintf(text, sizeof text, "rank %d%s, %.1f s ago", *node.slowestRank,
                node.slowestStep ? (", step " + std::to_string(*node.slowestStep)).c_str() : "",
                node.slowestSilence.value_or(0));
  return text;
}

// Seconds per step in three significant digits: "0.213", "12.5", "1500".
std::string stepSecondsText(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, seconds >= 1000 ? "%.0f" : "%.3g", seconds);
  return text;
}

// The node's ranks' step times: "0.213 s/step" when they agree (as data-parallel ranks do),
// else the fastest and the slowest, "0.2-0.25 s/step"; "-" while none has one.
std::string stepText(const NodeStatus& node) {
  if (node.stepSeconds.empty()) return "-";
  const auto [fastest, slowest] = std::minmax_element(node.stepSeconds.begin(), node.stepSeconds.end(),
                                                      [](const auto& a, const auto& b) { return a.second < b.second; });
  const std::string low = stepSecondsText(fastest->second);
  const std::string high = stepSecondsText(slowest->second);
  return (low == high ? low : low + "-" + high) + " s/step";
}

std::string percentText(double ratio) {
  char text[16];
  std::snprintf(text, sizeof text, "%.0f%%", std::clamp(ratio, 0.0, 9.99) * 100);
  return text;
}

std::string goodputText(const NodeStatus& node) { return node.goodput ? percentText(node.goodput->ratio()) : "-"; }

// "goodput: 83% (the lowest node's), 8.0 s lost to restarts", once a node published one.
std::string goodputLine(const JobStatus& status) {
  const std::optional<JobGoodput> job = jobGoodput(status);
  if (!job) return "";
  return "  goodput: " + percentText(job->ratio) + " (the lowest node's), " +
         secondsText(std::chrono::duration<double>(job->lostSeconds)) + " s lost to restarts\n";
}

// The node as the metrics' `node` label and the exclusions name it: node_name=, else the host.
std::string nodeName(const NodeStatus& node) { return node.name.empty() ? node.host : node.name; }

// The host column: the host, and the node's own name beside it where it has another, so that
// a row can be matched to its metrics.
std::string hostText(const NodeStatus& node) {
  const std::string host = terminalSafeLine(node.host);
  return node.name.empty() || node.name == node.host ? host : terminalSafeLine(node.name) + " (" + host + ")";
}

// Every text of a node row or JSON object comes from the store: shown within one line.
std::string nodeRow(const NodeStatus& node) {
  char row[1024];
  std::snprintf(row, sizeof row, "  %-5s %-16s %-16s %-8s %-9s %-8s %-11s %-9s %-16s %-7s %s\n",
                node.nodeRank < 0 ? "-" : std::to_string(node.nodeRank).c_str(), hostText(node).c_str(),
                terminalSafeLine(node.address).c_str(), node.pid == 0 ? "-" : std::to_string(node.pid).c_str(),
                ranksText(node).c_str(),
                node.workersRunning < 0
                    ? std::to_string(node.workers).c_str()
                    : (std::to_string(node.workersRunning) + "/" + std::to_string(node.workers)).c_str(),
                heartbeatText(node).c_str(), terminalSafeLine(node.state).c_str(), stepText(node).c_str(),
                goodputText(node).c_str(), slowestText(node).c_str());
  return row;
}

std::vector<std::string> safeNames(const JobStatus& status) {
  std::vector<std::string> names;
  for (const std::string& name : status.missing) names.push_back(terminalSafeLine(name));
  return names;
}

// {"RANK": seconds per step, ...}: JSON's object keys are strings.
json stepSecondsJson(const NodeStatus& node) {
  json ranks = json::object();
  for (const auto& [rank, seconds] : node.stepSeconds) ranks[std::to_string(rank)] = seconds;
  return ranks;
}

json goodputJson(const std::optional<rdzv::NodeGoodput>& goodput) {
  if (!goodput) return json();
  return {{"productive_s", goodput->productiveSeconds},
          {"elapsed_s", goodput->elapsedSeconds},
          {"lost_s", goodput->lostSeconds},
          {"ratio", goodput->ratio()}};
}

json nodeJson(const NodeStatus& node) {
  return {{"slot", node.slot},
          {"node_rank", node.nodeRank < 0 ? json() : json(node.nodeRank)},
          {"host", terminalSafeLine(node.host)},
          {"node", terminalSafeLine(nodeName(node))},
          {"address", terminalSafeLine(node.address)},
          {"pid", node.pid == 0 ? json() : json(node.pid)},
          {"ranks", node.firstRank < 0 ? json() : json{node.firstRank, node.firstRank + node.workers - 1}},
          {"workers", node.workers},
          {"workers_running", node.workersRunning < 0 ? json() : json(node.workersRunning)},
          {"heartbeat_age_s", node.heartbeatAge ? json(*node.heartbeatAge) : json()},
          {"state", terminalSafeLine(node.state)},
          {"slowest_rank", node.slowestRank ? json(*node.slowestRank) : json()},
          {"slowest_step", node.slowestStep ? json(*node.slowestStep) : json()},
          {"slowest_heartbeat_age_s", node.slowestSilence ? json(*node.slowestSilence) : json()},
          {"step_s", stepSecondsJson(node)},
          {"goodput", goodputJson(node.goodput)}};
}

}  // namespace

std::string renderStatusText(const JobStatus& status) {
  std::string text = summaryLine(status) + "\n";
  if (!status.nodes.empty()) {
    char header[256];
    std::snprintf(header, sizeof header, "  %-5s %-16s %-16s %-8s %-9s %-8s %-11s %-9s %-16s %-7s %s\n", "node", "host",
                  "address", "pid", "ranks", "workers", "heartbeat", "state", "step", "goodput", "slowest rank");
    text += header;
    for (const NodeStatus& node : status.nodes) text += nodeRow(node);
    text += goodputLine(status);
  }
  for (const NodeStatus& spare : status.spares) {
    text += "  spare: " + terminalSafeLine(spare.host) + " (" + terminalSafeLine(spare.address) +
            (spare.pid ? ", pid " + std::to_string(spare.pid) : "") + ")\n";
  }
  for (const rdzv::NodeExclusion& node : status.excluded) {
    text += "  excluded: " + node.node + " (" + node.kind + (node.time.empty() ? "" : ", since " + node.time) +
            "): " + node.reason + "\n";
  }
  if (!status.missing.empty())
    text += "  missing: " + rdzv::nodeNamesText(safeNames(status), status.missing.size()) + "\n";
  if (status.slotsCut)
    text += "  (the round claims more than " + std::to_string(kMaxStatusSlots) + " nodes; the first " +
            std::to_string(kMaxStatusSlots) + " are shown)\n";
  for (const std::string& key : status.malformedKeys) {
    text += "  the store holds a value at " + printableKey(key) +
            " that is not pltrun's: the job's state cannot be told from it\n";
  }
  return text;
}

namespace {

json jobGoodputJson(const JobStatus& status) {
  const std::optional<JobGoodput> job = jobGoodput(status);
  if (!job) return json();
  return {{"ratio", job->ratio}, {"lost_s", job->lostSeconds}};
}

}  // namespace

json statusJson(const JobStatus& status) {
  json nodes = json::array(), spares = json::array();
  for (const NodeStatus& node : status.nodes) nodes.push_back(nodeJson(node));
  for (const NodeStatus& spare : status.spares) spares.push_back(nodeJson(spare));
  json end;
  if (status.end) {
    end = json::parse(status.end->toJson());
    end["host"] = terminalSafeLine(status.end->host);
    end["message"] = terminalSafeLine(status.end->message);
  }
  return {{"schema", 1},
          {"run_id", terminalSafeLine(status.runId)},
          {"endpoint", terminalSafeLine(status.endpoint)},
          {"state", stateName(status.state)},
          {"exit_status", statusExitCode(status)},
          {"round", status.round},
          {"restarts", status.round},
          {"max_restarts", status.maxRestarts ? json(*status.maxRestarts) : json()},
          {"worker_failures", status.workerFailures},
          {"min_nodes", status.minNodes ? json(*status.minNodes) : json()},
          {"max_nodes", status.maxNodes ? json(*status.maxNodes) : json()},
          {"joined", status.joined},
          {"nodes", nodes},
          {"spares", spares},
          {"missing", safeNames(status)},
          {"excluded_nodes", rdzv::excludedNodesJson(status.excluded)},
          {"malformed_keys", status.malformedKeys},
          {"goodput", jobGoodputJson(status)},
          {"end", end},
          {"job_exit_status", status.state == JobStatus::State::Finished ? json(status.exitStatus) : json()}};
}

const char* stateName(JobStatus::State state) {
  switch (state) {
    case JobStatus::State::Waiting:
      return "waiting";
    case JobStatus::State::Running:
      return "running";
    case JobStatus::State::Reforming:
      return "re-forming";
    case JobStatus::State::Finished:
      return "finished";
    case JobStatus::State::Unknown:
      break;
  }
  return "unknown";
}

}  // namespace pltrun

#include "rendezvous/elastic/elastic_rendezvous.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <thread>

#include "pltrun/error.h"
#include "rendezvous/elastic/expected_nodes.h"
#include "rendezvous/elastic/store_json.h"

namespace pltrun::rdzv {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

// The most slots a round's keys are deleted for (forgetRound): members and spares together
// are far fewer; a count beyond it in the store is not pltrun's.
constexpr std::int64_t kMaxSlots = 65536;

// A value this rendezvous wrote as JSON, read back: anything else in the store (another
// program's key, a hand-made value) is a clear error naming the key, not an internal one.
nlohmann::json storedJson(const std::string& key, const std::string& text) {
  nlohmann::json value = nlohmann::json::parse(text, nullptr, false);
  if (!value.is_object()) throw notWhatPltrunWrites(key, text, "JSON object");
  return value;
}

// A count this rendezvous wrote as decimal text, read back.
int storedInteger(const std::string& key, const std::string& text) {
  return storedDecimal(key, text, 0, std::numeric_limits<int>::max(), "count");
}

int storedCount(const nlohmann::json& object, const char* field, int fallback) {
  auto found = object.find(field);
  return found != object.end() && found->is_number_integer() ? found->get<int>() : fallback;
}

// The first progress line comes this soon, then every progressInterval.
constexpr milliseconds kFirstProgress{1000};

long secondsLeft(Clock::time_point until) {
  auto left = std::chrono::duration_cast<milliseconds>(until - Clock::now()).count();
  return std::max<long>(0, (left + 999) / 1000);
}

std::string nodeCountRange(const ElasticRendezvousOptions& options) {
  if (options.minNodes == options.maxNodes) return std::to_string(options.maxNodes);
  return std::to_string(options.minNodes) + ".." + std::to_string(options.maxNodes);
}

}  // namespace

ElasticRendezvous::ElasticRendezvous(Store& store, ElasticRendezvousOptions options, NodeDescriptor self)
    : store_(store), options_(std::move(options)), self_(std::move(self)) {}

std::string ElasticRendezvous::key(const std::string& name) const { return jobKeyPrefix(options_.runId) + name; }

std::string ElasticRendezvous::lostNotice() const {
  RoundEnd lost;
  lost.reason = RoundEnd::Reason::NodeLost;
  lost.host = self_.host;
  lost.message = "its agent's connection to the store closed";
  return lost.toJson();
}

void ElasticRendezvous::throwIfJobClosed() {
  if (store_.check({key(layout::kClosed)})) {
    // Set only once the job is over: a malformed value there still ends it, saying so.
    RoundEnd closed = RoundEnd::fromStoreValue(key(layout::kClosed), store_.get(key(layout::kClosed)));
    if (!closed.final) {
      closed.final = true;
      closed.status = 1;
    }
    throw JobClosed{closed, !sawJobOpen_};
  }
}

// "round" only moves forward: concurrent joiners may write it in any order. It is decimal
// text (created by ADD), so compare-and-set can move it from the value last seen.
void ElasticRendezvous::advanceRoundHint(int seen, int round) {
  while (seen < round) {
    const std::string now = store_.compareSet(key(layout::kRound), std::to_string(seen), std::to_string(round));
    if (now == std::to_string(round)) return;
    seen = storedInteger(key(layout::kRound), now);
  }
}

RoundInfo ElasticRendezvous::join(int after, std::optional<int> expectedNodes, const BetweenWaits& betweenWaits) {
  deadline_ = Clock::now() + options_.joinTimeout;
  const int hint = static_cast<int>(store_.add(key(layout::kRound), 0));  // one request, missing reads as 0
  int round = std::max(after + 1, hint);
  for (;;) {
    // One look at the three keys that decide (one request on etcd).
    const std::optional<Watched> seen = firstExisting(round, {Watched::Closed, Watched::End, Watched::Complete});
    if (seen == Watched::Closed) throwIfJobClosed();
    if (seen == Watched::End) {  // over before we came
      ++round;
      continue;
    }
    if (seen == Watched::Complete) {
      // Formed and running without us.
      const std::string completeKey = key(layout::complete(round));
      const int nnodes = storedCount(storedJson(completeKey, store_.get(completeKey)), "nnodes", options_.maxNodes);
      standAside(round, nnodes, betweenWaits);
      expectedNodes = std::min(nnodes + 1, options_.maxNodes);
      ++round;
      continue;
    }
    if (yieldToMembers_) {
      // A spare lets the members of the last round re-form first, so that a restart does
      // not push one of them out; it asks for a place once the new round has formed.
      yieldToMembers_ = false;
      waitUntilFormedOrEnded(round, betweenWaits);
      continue;
    }
    advanceRoundHint(hint, round);
    if (std::optional<RoundInfo> info = tryRound(round, expectedNodes, betweenWaits)) return *info;
    ++round;
  }
}

std::vector<std::string> ElasticRendezvous::watchedKeys(int round, const std::vector<Watched>& watched) const {
  std::vector<std::string> keys;
  keys.reserve(watched.size());
  for (const Watched which : watched) {
    switch (which) {
      case Watched::Closed:
        keys.push_back(key(layout::kClosed));
        break;
      case Watched::End:
        keys.push_back(key(layout::end(round)));
        break;
      case Watched::Complete:
        keys.push_back(key(layout::complete(round)));
        break;
    }
  }
  return keys;
}

// The first of `watched` that exists now, if any.
std::optional<ElasticRendezvous::Watched> ElasticRendezvous::firstExisting(int round,
                                                                           const std::vector<Watched>& watched) {
  try {
    return watched.at(store_.waitAny(watchedKeys(round, watched), milliseconds(0), options_.pollInterval, {}));
  } catch (const Error& error) {
    if (error.code() != ErrorCode::Timeout) throw;
  }
  return std::nullopt;
}

// Which of `watched` exists first, within `timeout` (none: nullopt). The store runs
// betweenWaits every poll interval while it waits (on etcd that costs no request), and
// this once more when the wait times out, so that a wait of one poll interval runs it too.
std::optional<ElasticRendezvous::Watched> ElasticRendezvous::waitForAny(int round, const std::vector<Watched>& watched,
                                                                        milliseconds timeout,
                                                                        const BetweenWaits& betweenWaits) {
  try {
    return watched.at(store_.waitAny(watchedKeys(round, watched), std::max(timeout, milliseconds(1)),
                                     options_.pollInterval, betweenWaits));
  } catch (const Error& error) {
    if (error.code() != ErrorCode::Timeout) throw;
  }
  if (betweenWaits) betweenWaits();
  return std::nullopt;
}

void ElasticRendezvous::waitUntilFormedOrEnded(int round, const BetweenWaits& betweenWaits) {
  for (;;) {
    const std::optional<Watched> seen =
        waitForAny(round, {Watched::Complete, Watched::End, Watched::Closed}, options_.progressInterval, betweenWaits);
    if (seen == Watched::Closed) throwIfJobClosed();
    if (seen) return;
  }
}

// A round that formed without this node: below MAX it is asked to re-form with this node
// at once (scale-up); at MAX this node waits for the round to end, as a spare.
void ElasticRendezvous::standAside(int round, int runningNodes, const BetweenWaits& betweenWaits) {
  sawJobOpen_ = true;
  if (runningNodes < options_.maxNodes) {
    spdlog::info("the job is running with {} of at most {} nodes (round {}): asking it to re-form with this node",
                 runningNodes, options_.maxNodes, round);
    RoundEnd joined;
    joined.reason = RoundEnd::Reason::NodeJoined;
    joined.host = self_.host;
    joined.message = "a new node wants to join";
    endRound(round, joined);
    deadline_ = Clock::now() + options_.joinTimeout;
    return;
  }
  spdlog::info("the job is full ({} nodes, round {}): this node waits for a place", runningNodes, round);
  for (;;) {
    const std::optional<Watched> seen =
        waitForAny(round, {Watched::End, Watched::Closed}, options_.progressInterval * 6, betweenWaits);
    if (seen == Watched::Closed) throwIfJobClosed();
    if (seen) break;
    spdlog::info("still waiting for a place: the job runs round {} with all {} nodes", round, runningNodes);
  }
  // Only a lost member leaves a place for certain; after anything else the members come
  // back, and a spare that joined first would push one of them out.
  const RoundEnd::Reason reason =
      RoundEnd::fromStoreValue(key(layout::end(round)), store_.get(key(layout::end(round)))).reason;
  yieldToMembers_ = reason != RoundEnd::Reason::NodeLost && reason != RoundEnd::Reason::RendezvousFailed;
  deadline_ = Clock::now() + options_.joinTimeout;  // the join timeout counts from here
}

std::optional<RoundInfo> ElasticRendezvous::tryRound(int round, std::optional<int> expectedNodes,
                                                     const BetweenWaits& betweenWaits) {
  sawJobOpen_ = true;
  // The notice first: from our first write on, our death ends this round for the others.
  store_.setCloseNotice(key(layout::end(round)), lostNotice());
  const int slot = static_cast<int>(store_.increment(key(layout::count(round))));
  store_.set(key(layout::slot(round, slot)), toJson(self_).dump());
  if (slot > options_.maxNodes) {
    store_.setCloseNotice("", "");  // not a member: our death changes nothing for them
    standAside(round, options_.maxNodes, betweenWaits);
    return std::nullopt;
  }
  lastMemberRound_ = round;
  // The round closes at once when this joiner completes the membership: MAX, or the nodes
  // expected after a restart.
  const int closeEarlyAt =
      std::max(options_.minNodes, std::min(expectedNodes.value_or(options_.maxNodes), options_.maxNodes));
  if (slot >= closeEarlyAt) closeRound(round);

  if (!waitUntilFormed(round, slot, closeEarlyAt, betweenWaits)) return std::nullopt;

  // The closer wrote every member's assignment before "complete": none for this slot means
  // it joined just after the round closed.
  const std::string assignKey = key(layout::assign(round, slot));
  if (!store_.check({assignKey})) {
    store_.setCloseNotice("", "");
    const std::string completeKey = key(layout::complete(round));
    standAside(round, storedCount(storedJson(completeKey, store_.get(completeKey)), "nnodes", options_.maxNodes),
               betweenWaits);
    return std::nullopt;
  }
  std::vector<std::string> values = store_.multiGet({key(layout::complete(round)), assignKey}, options_.closeTimeout);
  RoundInfo info;
  info.round = round;
  info.slot = slot;
  info.assignment = nodeAssignmentFromJson(values[1]);
  info.failures = storedCount(storedJson(key(layout::complete(round)), values[0]), "failures", 0);
  return info;
}

// Until `round` is complete (true), or ends before forming (false): keeps the last call in
// slot 1, says who is missing, and ends the job when the join timeout passes.
bool ElasticRendezvous::waitUntilFormed(int round, int slot, int closeEarlyAt, const BetweenWaits& betweenWaits) {
  // Waiting costs little: one wait for "complete" or "end" (a joiner vanished, or the job
  // was closed: the next round, where join() sees why). Only slot 1 keeps the last call,
  // waking every poll interval to read the count (and the joiners' names where the job
  // expects named nodes); the others wait in waitAsJoiner.
  if (slot != 1) return waitAsJoiner(round, betweenWaits);
  JoinRoster roster(store_, options_.expectedHosts, jobKeyPrefix(options_.runId), round);
  std::optional<Clock::time_point> lastCallEnds;
  auto nextProgress = Clock::now() + kFirstProgress;
  for (;;) {
    const std::optional<Watched> seen =
        waitForAny(round, {Watched::Complete, Watched::End}, options_.pollInterval, betweenWaits);
    if (seen) return seen == Watched::Complete;
    const auto now = Clock::now();
    const int joined = static_cast<int>(store_.add(key(layout::count(round)), 0));
    roster.track(joined);
    if (joined >= options_.minNodes && !lastCallEnds) lastCallEnds = now + options_.lastCallTimeout;
    if (joined >= closeEarlyAt || (lastCallEnds && now >= *lastCallEnds)) {
      closeRound(round);
      continue;
    }
    if (now >= deadline_ && joined < options_.minNodes) failJoinTimeout(round, joined, roster);
    if (now >= nextProgress) {
      reportWaiting(joined, lastCallEnds, roster);
      nextProgress = now + options_.progressInterval;
    }
  }
}

// A joiner other than slot 1 holds one wait for "complete" or "end" for as long as the
// round forms (on etcd one watch, kept open, sending nothing), and sees to its progress
// lines and the join timeout between the wait's slices, each a read of the count. Its lines
// come ever less often (1, 5, 10, 20, 40 s, then every 60 s): 4096 agents reading the count
// every 5 s were 800 requests a second.
bool ElasticRendezvous::waitAsJoiner(int round, const BetweenWaits& betweenWaits) {
  JoinRoster roster(store_, options_.expectedHosts, jobKeyPrefix(options_.runId), round);
  int reports = 0;
  auto nextProgress = Clock::now() + kFirstProgress;
  bool lookedAtDeadline = false;
  const BetweenWaits progress = [&] {
    if (betweenWaits) betweenWaits();
    const auto now = Clock::now();
    const bool deadlineCame = now >= deadline_ && !lookedAtDeadline;
    if (now < nextProgress && !deadlineCame) return;
    lookedAtDeadline = lookedAtDeadline || now >= deadline_;
    const int joined = static_cast<int>(store_.add(key(layout::count(round)), 0));
    if (now >= deadline_ && joined < options_.minNodes) failJoinTimeout(round, joined, roster);
    if (now >= nextProgress) {
      reportWaiting(joined, std::nullopt, roster);
      nextProgress = now + options_.progressInterval * std::min(1 << std::min(reports++, 4), 12);
    }
  };
  for (;;) {
    if (const std::optional<Watched> seen =
            waitForAny(round, {Watched::Complete, Watched::End}, options_.progressInterval * 12, progress)) {
      return seen == Watched::Complete;
    }
  }
}

// Nobody came in time: the job ends for every agent, with who is missing (by name where
// the job expects named nodes).
void ElasticRendezvous::failJoinTimeout(int round, int joined, JoinRoster& roster) {
  RoundEnd timedOut;
  timedOut.reason = RoundEnd::Reason::TimedOut;
  timedOut.host = self_.host;
  timedOut.status = 1;
  timedOut.final = true;
  timedOut.message = std::to_string(joined) + " of at least " + std::to_string(options_.minNodes) +
                     " nodes joined round " + std::to_string(round) + " within " +
                     std::to_string(options_.joinTimeout.count() / 1000) + " s (" +
                     std::to_string(options_.minNodes - joined) + " missing";
  if (std::optional<std::vector<std::string>> names = roster.missing(); names && !names->empty()) {
    timedOut.message += "; not joined: " + nodeNamesText(*names);
  }
  timedOut.message += ")";
  closeJob(timedOut);
  endRound(round, timedOut);
  throw JobClosed{timedOut};
}

// One progress line while a round forms: "waiting for nodes: 3/4 joined (1 missing to
// start), missing: gpu-07; join timeout in 540 s". Names only where the job expects named
// nodes.
void ElasticRendezvous::reportWaiting(int joined, std::optional<Clock::time_point> lastCallEnds, JoinRoster& roster) {
  std::string line = "waiting for nodes: " + std::to_string(joined) + "/";
  if (joined >= options_.minNodes) {
    line += std::to_string(options_.maxNodes) + " joined";
  } else {
    line += nodeCountRange(options_) + " joined (" + std::to_string(options_.minNodes - joined) + " missing to start)";
  }
  if (std::optional<std::vector<std::string>> names = roster.missing(); names && !names->empty()) {
    line += ", missing: " + nodeNamesText(*names);
  }
  if (lastCallEnds) {
    line += "; last call ends in " + std::to_string(secondsLeft(*lastCallEnds)) + " s";
  } else if (joined >= options_.minNodes) {
    line += "; closing soon";
  } else {
    line += "; join timeout in " + std::to_string(secondsLeft(deadline_)) + " s";
  }
  spdlog::info("{}", line);
}

// Closes the round with whoever has joined (at most MAX): one agent wins the lock, reads the
// descriptors, and publishes every node's assignment before marking the round complete.
void ElasticRendezvous::closeRound(int round) {
  if (store_.compareSet(key(layout::closing(round)), "", self_.agentId) != self_.agentId) return;
  const int nnodes = std::min(static_cast<int>(store_.add(key(layout::count(round)), 0)), options_.maxNodes);
  std::vector<std::string> slotKeys, assignKeys;
  for (int slot = 1; slot <= nnodes; ++slot) {
    slotKeys.push_back(key(layout::slot(round, slot)));
    assignKeys.push_back(key(layout::assign(round, slot)));
  }
  // Every slot up to the count is taken; wait for its description, unless the round ends
  // meanwhile (a joiner that died between taking its slot and describing itself ends it).
  const auto deadline = Clock::now() + options_.closeTimeout;
  bool described = false;
  while (!described && Clock::now() < deadline) {
    try {
      store_.wait(slotKeys, options_.pollInterval);
      described = true;
    } catch (const Error& error) {
      if (error.code() != ErrorCode::Timeout) throw;
      if (store_.check({key(layout::end(round))})) return;
    }
  }
  std::vector<std::string> slots;
  try {
    slots = store_.multiGet(slotKeys, described ? options_.closeTimeout : milliseconds(1));
  } catch (const Error& error) {
    if (error.code() != ErrorCode::Timeout) throw;
    RoundEnd failed;
    failed.reason = RoundEnd::Reason::RendezvousFailed;
    failed.host = self_.host;
    failed.message = "a node took a slot but never described itself";
    endRound(round, failed);
    return;
  }
  std::vector<NodeDescriptor> nodes;
  nodes.reserve(slots.size());
  for (const std::string& text : slots) nodes.push_back(nodeDescriptorFromJson(text));
  AssignmentResult result = assignNodeRanks(nodes);
  if (!result.warning.empty()) spdlog::warn("{}", result.warning);
  std::vector<std::string> assignments;
  assignments.reserve(nodes.size());
  for (const NodeAssignment& assignment : result.byParticipant) assignments.push_back(toJson(assignment).dump());
  store_.multiSet(assignKeys, assignments);
  const int worldSize = result.byParticipant.empty() ? 0 : result.byParticipant.front().worldSize;
  const int failures = static_cast<int>(store_.add(key(layout::kFailures), 0));
  store_.set(key(layout::complete(round)),
             nlohmann::json{{"nnodes", nnodes}, {"world_size", worldSize}, {"failures", failures}}.dump());
}

RoundEnd ElasticRendezvous::endRound(int round, const RoundEnd& end) {
  const std::string ours = end.toJson();
  return RoundEnd::fromStoreValue(key(layout::end(round)), store_.compareSet(key(layout::end(round)), "", ours));
}

RoundEnd ElasticRendezvous::reportWorkerFailure(int round, RoundEnd failure, int maxRestarts) {
  // Only the agent whose end holds counts the failure, and rounds follow one another, so
  // the count needs no lock.
  failure.reason = RoundEnd::Reason::WorkerFailed;
  failure.failures = static_cast<int>(store_.add(key(layout::kFailures), 0)) + 1;
  failure.final = failure.failures > maxRestarts;
  const std::string ours = failure.toJson();
  const std::string held = store_.compareSet(key(layout::end(round)), "", ours);
  if (held == ours) {
    store_.add(key(layout::kFailures), 1);
    if (failure.final) closeJob(failure);
  }
  return RoundEnd::fromStoreValue(key(layout::end(round)), held);
}

void ElasticRendezvous::reportSucceeded(const RoundInfo& info) {
  if (store_.add(key(layout::done(info.round)), 1) < info.assignment.nnodes) return;
  RoundEnd succeeded;
  succeeded.reason = RoundEnd::Reason::Succeeded;
  succeeded.host = self_.host;
  succeeded.final = true;
  if (endRound(info.round, succeeded).reason == RoundEnd::Reason::Succeeded) closeJob(succeeded);
}

void ElasticRendezvous::reportNodeState(const RoundInfo& info, const std::string& state, int workersRunning,
                                        const std::vector<RankProgress>& ranks,
                                        const std::optional<NodeGoodput>& goodput) {
  const NodeState published{state, workersRunning, self_.host, ranks, goodput};
  store_.set(key(layout::state(info.round, info.slot)), encodeNodeState(published));
}

std::vector<NodeState> ElasticRendezvous::readOtherNodesStates(const RoundInfo& info,
                                                               std::chrono::steady_clock::time_point deadline) {
  std::vector<NodeState> states;
  for (int slot = 1; slot <= info.assignment.nnodes && Clock::now() < deadline; ++slot) {
    const std::string stateKey = key(layout::state(info.round, slot));
    if (slot == info.slot || !store_.check({stateKey})) continue;
    if (auto state = decodeNodeState(store_.get(stateKey, milliseconds(1000)))) states.push_back(*state);
  }
  return states;
}

int ElasticRendezvous::forgetRound(int round) {
  const std::string countKey = key(layout::count(round));
  if (round < 0 || !store_.check({countKey})) return 0;
  // The slot count is the store's word: no more slots than a job may have nodes.
  const auto slots = std::clamp<std::int64_t>(store_.add(countKey, 0), 0, kMaxSlots);
  int deleted = 0;
  for (const std::string& name : layout::keysOfRound(round, static_cast<int>(slots))) {
    deleted += store_.deleteKey(key(name)) ? 1 : 0;
  }
  return deleted;
}

void ElasticRendezvous::closeJob(const RoundEnd& why) { store_.compareSet(key(layout::kClosed), "", why.toJson()); }

void ElasticRendezvous::leave(int round) {
  store_.setCloseNotice("", "");
  store_.add(key(layout::left(round)), 1);
}

void ElasticRendezvous::waitForOthersToLeave(int round, int others, milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  auto nextReport = Clock::now() + options_.progressInterval;
  for (;;) {
    // An agent that had joined the next round before the job closed leaves from that one.
    const int left =
        static_cast<int>(store_.add(key(layout::left(round)), 0) + store_.add(key(layout::left(round + 1)), 0));
    if (left >= others || Clock::now() >= deadline) return;
    if (Clock::now() >= nextReport) {
      spdlog::info("waiting for {} of {} other agents to finish before closing the store ({} s left)", others - left,
                   others, secondsLeft(deadline));
      nextReport = Clock::now() + options_.progressInterval;
    }
    std::this_thread::sleep_for(milliseconds(20));
  }
}

int ElasticRendezvous::membersOf(int round) { return static_cast<int>(store_.add(key(layout::count(round)), 0)); }

}  // namespace pltrun::rdzv

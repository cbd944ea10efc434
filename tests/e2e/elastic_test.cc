// Elastic multi-node jobs on one machine: several real pltrun agents meet (through the c10d
// rendezvous store that the first one hosts, or through a real etcd member the test starts;
// on loopback, or in two network namespaces joined by a veth pair), and re-form the job when
// a worker fails, an agent dies or a node joins. The tests templated over C10dMeeting and
// EtcdMeeting (e2e/elastic_meeting.h) run on both backends.
//
// With c10d every agent is started with `--rdzv-endpoint 127.0.0.1:0` (the first, which
// hosts the store and prints its port) or the printed port (the others); etcd's members
// listen on ports found free: no fixed port anywhere.
// Workers run the test worker's `serve` mode, which records its environment, pid, parent
// pid and start time per round in DIR/env_RANK_RESTARTCOUNT.json and runs until SIGTERM or
// until the test creates DIR/release.

#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "e2e/elastic_job.h"
#include "e2e/elastic_meeting.h"
#include "helpers/child_process.h"
#include "helpers/network_namespaces.h"
#include "helpers/temp_dir.h"
#include "helpers/worker_env_file.h"

using namespace pltrun::test;
using namespace std::chrono_literals;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// An agent of `job` inside network namespace `ns`; the endpoint is namespace a's address,
// so the agent started there hosts the store.
ChildProcess& startInNamespace(ElasticJob& job, const std::string& ns) {
  return job.start({"/bin/ip", "netns", "exec", ns}, "10.231.77.1");
}

}  // namespace

TEMPLATE_TEST_CASE("2 and 3 agents meet and every worker gets its global rank", "[elastic]", C10dMeeting, EtcdMeeting) {
  TestType meeting;
  for (int nodes : {2, 3}) {
    TempDir dir;
    WorkerSweeper sweeper(dir);
    const std::string runId = "ranks" + std::to_string(nodes);
    ElasticJob job(dir, std::to_string(nodes), runId, {}, {testWorker(), "env", dir.path()});
    meeting.prepare(job);
    for (int node = 0; node < nodes; ++node) job.start();
    std::vector<Finished> results = job.waitAll();
    INFO("nodes=" << nodes << describe(results));
    for (const Finished& result : results) {
      CHECK(result.status == 0);
      CHECK(!result.timedOut);
    }
    const int world = 2 * nodes;
    std::set<int> ranks;
    std::set<std::string> runIds;
    std::set<std::string> masterPorts;
    for (const auto& entry : fs::directory_iterator(dir.path())) {
      const std::string file = entry.path().filename().string();
      if (file.rfind("env_", 0) != 0) continue;
      json env = json::parse(readFile(entry.path().string()));
      const int rank = std::stoi(env["RANK"].get<std::string>());
      INFO("rank " << rank << ": " << env.dump());
      CHECK(file == "env_" + std::to_string(rank) + ".json");
      CHECK(ranks.insert(rank).second);  // each rank exactly once
      CHECK(env["WORLD_SIZE"] == std::to_string(world));
      CHECK(env["LOCAL_WORLD_SIZE"] == "2");
      CHECK(env["LOCAL_RANK"] == std::to_string(rank % 2));
      CHECK(env["NODE_RANK"] == std::to_string(rank / 2));
      CHECK(env["GROUP_RANK"] == std::to_string(rank / 2));
      CHECK(env["GROUP_WORLD_SIZE"] == std::to_string(nodes));
      CHECK(env["MASTER_ADDR"] == "127.0.0.1");
      masterPorts.insert(env["MASTER_PORT"].get<std::string>());
      CHECK(env["TORCHELASTIC_USE_AGENT_STORE"] == "True");
      CHECK(env["TORCHELASTIC_RESTART_COUNT"] == "0");
      runIds.insert(env["TORCHELASTIC_RUN_ID"].get<std::string>());
    }
    CHECK(ranks.size() == static_cast<size_t>(world));
    CHECK((ranks.empty() || (*ranks.begin() == 0 && *ranks.rbegin() == world - 1)));
    CHECK(runIds == std::set<std::string>{runId});
    // One workers' store for the round (node rank 0's), apart from the rendezvous store.
    CHECK(masterPorts.size() == 1);
    CHECK(masterPorts.count(std::to_string(job.port())) == 0);
    // Every agent reports its own place in round 0, and the node ranks are 0..nodes-1.
    std::set<std::string> places;
    for (const Finished& result : results) {
      std::smatch match;
      if (std::regex_search(result.err, match, std::regex("round 0: node rank ([0-9]+) of ([0-9]+) nodes"))) {
        places.insert(match[1].str());
        CHECK(match[2].str() == std::to_string(nodes));
      }
    }
    CHECK(places.size() == static_cast<size_t>(nodes));
    checkNoWorkerLeft(dir);
  }
}

TEMPLATE_TEST_CASE("kill -9 of one worker restarts every node's workers in the next round", "[elastic][restart]",
                   C10dMeeting, EtcdMeeting) {
  TestType meeting;
  TempDir dir;
  WorkerSweeper sweeper(dir);
  ElasticJob job(dir, "2", "workerkill", {"--max-restarts", "1"}, {testWorker(), "serve", dir.path()});
  meeting.prepare(job);
  job.start();
  job.start();
  Round first = waitForRound(dir, 4, 0);
  REQUIRE(first.restart == 0);
  const pid_t victim = first.byRank.at(3).pid();
  REQUIRE(kill(victim, SIGKILL) == 0);

  Round second = waitForRound(dir, 4, 1);
  CHECK(second.restart == 1);
  for (const auto& [rank, record] : second.byRank) {
    INFO("rank " << rank << ": " << record.env.dump());
    CHECK(record.var("TORCHELASTIC_RESTART_COUNT") == "1");
    CHECK(record.var("WORLD_SIZE") == "4");
    CHECK(record.var("GROUP_WORLD_SIZE") == "2");
    CHECK(record.pid() != first.byRank.at(rank).pid());  // a new process
  }
  release(dir);
  std::vector<Finished> results = job.waitAll();
  INFO(describe(results));
  for (const Finished& result : results) CHECK(result.status == 0);
  bool sawSignal = false;
  for (size_t index = 0; index < job.size(); ++index) {
    CHECK(contains(results[index].err, "restarting every node's workers (1 of 1 restarts)"));
    std::vector<json> events = agentEvents(dir, job.runId(), job.agent(index).pid());
    INFO("agent " << index << " events: " << json(events).dump());
    std::vector<json> restarts = eventsNamed(events, "restart");
    REQUIRE(restarts.size() == 1);
    CHECK(restarts[0].value("reason", "") == "worker_failed");
    CHECK(restarts[0].value("round", -1) == 0);
    CHECK(restarts[0].value("failures", -1) == 1);
    for (const auto& exited : eventsNamed(events, "worker_exited")) {
      if (exited.value("pid", 0) == victim && exited.value("signal", 0) == SIGKILL) sawSignal = true;
    }
    CHECK(eventsNamed(events, "rendezvous_complete").size() == 2);
    CHECK(eventsNamed(events, "job_finished").size() == 1);
    CHECK(events.front().value("event", "") == "run_started");  // docs/EVENTS.md, schema 1
    CHECK(events.front().value("run_id", "") == job.runId());
    for (const json& event : events) CHECK(event.value("schema", 0) == 1);
  }
  CHECK(sawSignal);  // the failing node logged its worker's SIGKILL
  checkNoWorkerLeft(dir);
}

TEMPLATE_TEST_CASE("kill -9 of one agent: its workers die and the others re-form without it", "[elastic][lifetime]",
                   C10dMeeting, EtcdMeeting) {
  TestType meeting;
  TempDir dir;
  WorkerSweeper sweeper(dir);
  ElasticJob job(dir, "1:3", "agentkill", {}, {testWorker(), "serve", dir.path()});
  meeting.prepare(job);
  for (int node = 0; node < 3; ++node) job.start();
  Round full = waitForRound(dir, 6, 0);

  // Not the first agent: with c10d it hosts the store, without which the job cannot go on
  // (on etcd, node rank 0's agent is killed in elastic_etcd_test.cc).
  ChildProcess& victim = job.agent(2);
  std::vector<pid_t> victimWorkers;
  for (const auto& [rank, record] : full.byRank) {
    if (record.ppid() == victim.pid()) victimWorkers.push_back(record.pid());
  }
  REQUIRE(victimWorkers.size() == 2);
  const long long killedAt = monotonicNanoseconds();
  victim.signal(SIGKILL);
  Finished killed = victim.wait(10s);
  CHECK(killed.status == 128 + SIGKILL);
  CHECK(waitUntilGone(victimWorkers, 5s).empty());

  Round reformed = waitForRound(dir, 4, full.restart + 1);
  long long latest = 0, earliest = 0;
  std::map<pid_t, int> perAgent;
  for (const auto& [rank, record] : reformed.byRank) {
    INFO("rank " << rank << ": " << record.env.dump());
    CHECK(record.var("GROUP_WORLD_SIZE") == "2");
    CHECK(record.var("TORCHELASTIC_RESTART_COUNT") == std::to_string(reformed.restart));
    ++perAgent[record.ppid()];
    latest = std::max(latest, record.startedNs());
    earliest = earliest == 0 ? record.startedNs() : std::min(earliest, record.startedNs());
  }
  CHECK(perAgent == std::map<pid_t, int>{{job.agent(0).pid(), 2}, {job.agent(1).pid(), 2}});
  // From the kill to the last (and first) worker of the new round started, per the workers'
  // own CLOCK_MONOTONIC stamps.
  const double seconds = static_cast<double>(latest - killedAt) / 1e9;
  WARN("re-formed after kill -9: all in " << seconds * 1000 << " ms, first in "
                                          << static_cast<double>(earliest - killedAt) / 1e6 << " ms");
  CHECK(seconds < 10.0);

  release(dir);
  for (size_t index = 0; index < 2; ++index) {
    Finished result = job.agent(index).wait(kAgentExit);
    INFO("agent " << index << ":\n" << result.err);
    CHECK(result.status == 0);
    CHECK(contains(result.err, "re-forming the job"));
    std::vector<json> events = agentEvents(dir, job.runId(), job.agent(index).pid());
    INFO("events: " << json(events).dump());
    bool left = false, twoNodes = false;
    for (const auto& event : eventsNamed(events, "node_left")) left = left || event.value("reason", "") == "node_lost";
    for (const auto& event : eventsNamed(events, "rendezvous_complete")) {
      twoNodes = twoNodes || (event.value("nnodes", 0) == 2 && event.value("round", -1) == reformed.restart &&
                              event.value("world_size", 0) == 4);
    }
    CHECK(left);
    CHECK(twoNodes);
  }
  checkNoWorkerLeft(dir);
}

TEMPLATE_TEST_CASE("a late agent joins a running job, which re-forms with it", "[elastic]", C10dMeeting, EtcdMeeting) {
  TestType meeting;
  TempDir dir;
  WorkerSweeper sweeper(dir);
  ElasticJob job(dir, "2:3", "latejoin", {}, {testWorker(), "serve", dir.path()});
  meeting.prepare(job);
  job.start();
  job.start();
  Round pair = waitForRound(dir, 4, 0);
  ChildProcess& newcomer = job.start();
  Round three = waitForRound(dir, 6, pair.restart + 1);
  std::set<std::string> pairPorts, threePorts;
  for (const auto& [rank, record] : pair.byRank) pairPorts.insert(record.var("MASTER_PORT"));
  for (const auto& [rank, record] : three.byRank) {
    INFO("rank " << rank << ": " << record.env.dump());
    CHECK(record.var("GROUP_WORLD_SIZE") == "3");
    CHECK(record.var("NODE_RANK") == std::to_string(rank / 2));
    CHECK(record.var("LOCAL_RANK") == std::to_string(rank % 2));
    CHECK(record.var("TORCHELASTIC_RESTART_COUNT") == std::to_string(three.restart));
    threePorts.insert(record.var("MASTER_PORT"));
  }
  // Each round's workers share one store of their own, new for the round.
  CHECK(pairPorts.size() == 1);
  CHECK(threePorts.size() == 1);
  CHECK(pairPorts != threePorts);
  CHECK(threePorts.count(std::to_string(job.port())) == 0);
  std::set<pid_t> parents;
  for (const auto& [rank, record] : three.byRank) parents.insert(record.ppid());
  CHECK(parents.count(newcomer.pid()) == 1);
  CHECK(parents.size() == 3);

  release(dir);
  std::vector<Finished> results = job.waitAll();
  INFO(describe(results));
  for (const Finished& result : results) CHECK(result.status == 0);
  CHECK(contains(results[2].err, "the job is running with 2 of at most 3 nodes"));
  CHECK(contains(results[2].err, "asking it to re-form with this node"));
  for (size_t index = 0; index < 2; ++index) {
    CHECK(contains(results[index].err, "re-forming the job"));
    std::vector<json> events = agentEvents(dir, job.runId(), job.agent(index).pid());
    INFO("agent " << index << " events: " << json(events).dump());
    CHECK(!eventsNamed(events, "node_joined").empty());
  }
  checkNoWorkerLeft(dir);
}

TEMPLATE_TEST_CASE("too few agents within join_timeout: every agent exits 1 and names the missing nodes", "[elastic]",
                   C10dMeeting, EtcdMeeting) {
  TestType meeting;
  const std::string conf = "last_call_timeout=1,join_timeout=3";
  SECTION("one agent of at least 2") {
    TempDir dir;
    WorkerSweeper sweeper(dir);
    ElasticJob job(dir, "2:3", "alone", {}, {testWorker(), "serve", dir.path()}, conf);
    meeting.prepare(job);
    const auto start = std::chrono::steady_clock::now();
    job.start();
    std::vector<Finished> results = job.waitAll(30s);
    const auto elapsed = std::chrono::steady_clock::now() - start;
    INFO(describe(results));
    CHECK(results[0].status == 1);
    CHECK(elapsed < 10s);
    CHECK(
        contains(results[0].err, "rendezvous timed out: 1 of at least 2 nodes joined round 0 within 3 s (1 missing)"));
    CHECK(contains(results[0].err, "waiting for nodes: 1/2..3 joined (1 missing to start)"));
    CHECK(readRecords(dir).empty());  // no worker ever started
  }
  SECTION("two agents of 3") {
    TempDir dir;
    WorkerSweeper sweeper(dir);
    ElasticJob job(dir, "3", "pair", {}, {testWorker(), "serve", dir.path()}, conf);
    meeting.prepare(job);
    const auto start = std::chrono::steady_clock::now();
    job.start();
    job.start();
    std::vector<Finished> results = job.waitAll(30s);
    const auto elapsed = std::chrono::steady_clock::now() - start;
    INFO(describe(results));
    CHECK(elapsed < 15s);
    for (const Finished& result : results) {
      CHECK(result.status == 1);
      CHECK(contains(result.err, "rendezvous timed out: 2 of at least 3 nodes joined round 0"));
      CHECK(contains(result.err, "(1 missing)"));
    }
    CHECK(readRecords(dir).empty());
  }
}

TEMPLATE_TEST_CASE("a worker failure with no restart left ends every agent with the worker's status", "[elastic]",
                   C10dMeeting, EtcdMeeting) {
  TestType meeting;
  TempDir dir;
  WorkerSweeper sweeper(dir);
  ElasticJob job(dir, "2", "fail5", {"--max-restarts", "0"}, {testWorker(), "exit", "5", "3"});
  meeting.prepare(job);
  job.start();
  job.start();
  std::vector<Finished> results = job.waitAll();
  INFO(describe(results));
  int reporters = 0, told = 0;
  for (const Finished& result : results) {
    CHECK(result.status == 5);
    CHECK(!result.timedOut);
    if (contains(result.err, "worker failure (root cause")) {
      ++reporters;
      CHECK(contains(result.err, "ranks 2-3 of 4"));  // the node of rank 3 reports it
    } else if (contains(result.err, "the job failed")) {
      ++told;
      CHECK(contains(result.err, "ranks 0-1 of 4"));
    }
  }
  CHECK(reporters == 1);
  CHECK(told == 1);
}

TEMPLATE_TEST_CASE("SIGTERM to one agent stops the whole job: every agent exits 143", "[elastic][signals]", C10dMeeting,
                   EtcdMeeting) {
  TestType meeting;
  // The agent that hosts the store, or one that joined it.
  for (size_t target : {size_t{0}, size_t{1}}) {
    TempDir dir;
    WorkerSweeper sweeper(dir);
    ElasticJob job(dir, "2", "term" + std::to_string(target), {}, {testWorker(), "signals", dir.path()});
    meeting.prepare(job);
    job.start();
    job.start();
    for (int rank = 0; rank < 4; ++rank) REQUIRE(waitForFile(dir / ("ready_" + std::to_string(rank)), kRoundForms));
    job.agent(target).signal(SIGTERM);
    std::vector<Finished> results = job.waitAll();
    INFO("SIGTERM to agent " << target << describe(results));
    for (const Finished& result : results) {
      CHECK(result.status == 128 + SIGTERM);
      CHECK(!result.timedOut);
    }
    // Every worker was asked to stop, and stopped by itself (SIGTERM, not SIGKILL).
    for (int rank = 0; rank < 4; ++rank) CHECK(readFile(dir / ("term_" + std::to_string(rank))) == "1");
    checkNoWorkerLeft(dir);
  }
}

TEST_CASE("agents in two network namespaces meet over a veth pair", "[elastic][netns]") {
  NamespacePair namespaces;
  if (!namespacesReady(namespaces)) return;
  TempDir dir;
  WorkerSweeper sweeper(dir);
  ElasticJob job(dir, "2", "netns", {}, {testWorker(), "env", dir.path()});
  startInNamespace(job, namespaces.a());
  startInNamespace(job, namespaces.b());
  std::vector<Finished> results = job.waitAll();
  INFO(describe(results));
  for (const Finished& result : results) CHECK(result.status == 0);
  CHECK(contains(results[0].err, "listening on 10.231.77.1:" + std::to_string(job.port())));
  std::set<std::string> masterAddrs, masterPorts;
  for (int rank = 0; rank < 4; ++rank) {
    json env = workerEnvironment(dir, rank);
    CHECK(env["WORLD_SIZE"] == "4");
    masterAddrs.insert(env["MASTER_ADDR"].get<std::string>());
    masterPorts.insert(env["MASTER_PORT"].get<std::string>());
    CHECK(env["GROUP_WORLD_SIZE"] == "2");
  }
  // The workers' store is node rank 0's, on that node's own address (either namespace's),
  // never the rendezvous store's port; the workers of the other namespace reached it.
  CHECK(masterPorts.size() == 1);
  CHECK(masterPorts.count(std::to_string(job.port())) == 0);
  CHECK(masterAddrs.size() == 1);
  CHECK((masterAddrs.count("10.231.77.1") + masterAddrs.count("10.231.77.2")) == 1);
  checkNoWorkerLeft(dir);
}

TEST_CASE("a node cut off from the store kills its workers before the others re-form without it",
          "[elastic][netns][fencing]") {
  NamespacePair namespaces;
  if (!namespacesReady(namespaces)) return;
  TempDir dir;
  WorkerSweeper sweeper(dir);
  ElasticJob job(dir, "1:2", "fence", {}, {testWorker(), "serve", dir.path()});
  startInNamespace(job, namespaces.a());  // hosts the store
  ChildProcess& cutOff = startInNamespace(job, namespaces.b());
  Round both = waitForRound(dir, 4, 0);
  std::vector<pid_t> cutOffWorkers;
  for (const auto& [rank, record] : both.byRank) {
    if (record.ppid() == cutOff.pid()) cutOffWorkers.push_back(record.pid());
  }
  REQUIRE(cutOffWorkers.size() == 2);

  // The cut: b's link goes down, nothing is sent or answered any more, no connection resets.
  std::atomic<long long> cutOffWorkersGoneNs{0};
  std::thread watchWorkers([&] {
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (std::chrono::steady_clock::now() < deadline) {
      if (std::all_of(cutOffWorkers.begin(), cutOffWorkers.end(), processGone)) {
        cutOffWorkersGoneNs = monotonicNanoseconds();
        return;
      }
      std::this_thread::sleep_for(2ms);
    }
  });
  const long long cutNs = monotonicNanoseconds();
  REQUIRE(namespaces.cutB());

  // The host's side re-forms alone once its heartbeats miss the cut-off node.
  Round alone = waitForRound(dir, 2, both.restart + 1);
  watchWorkers.join();
  long long aloneStartedNs = std::numeric_limits<long long>::max();
  for (const auto& [rank, record] : alone.byRank) aloneStartedNs = std::min(aloneStartedNs, record.startedNs());
  INFO("after the cut: the cut-off node's workers gone at " << (cutOffWorkersGoneNs - cutNs) / 1e6
                                                            << " ms, the new round's first worker started at "
                                                            << (aloneStartedNs - cutNs) / 1e6 << " ms");
  REQUIRE(cutOffWorkersGoneNs > 0);
  CHECK(cutOffWorkersGoneNs < aloneStartedNs);  // never two generations of the job at once

  release(dir);
  std::vector<Finished> results = job.waitAll();
  INFO(describe(results));
  CHECK(results[0].status == 0);  // the job finished on the host's side
  CHECK(results[1].status == 1);
  CHECK(contains(results[1].err, "workers were killed at once, before the other nodes could re-form without it"));
  checkNoWorkerLeft(dir);
}

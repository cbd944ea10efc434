// What only etcd gives an elastic job: no agent hosts anything the job cannot lose. Real
// pltrun agents meet at real etcd members the tests start on loopback (e2e/elastic_meeting.h):
//   - kill -9 of node rank 0's agent (the one a c10d job could not lose when it hosts the
//     store, and the host of the round's workers' store): the survivors re-form;
//   - an agent that stops answering (SIGSTOP) is found within the keep-alive budget;
//   - any one member of 3 killed in turn (the leader among them): no worker restarts;
//   - quorum lost: the workers keep running, and the job goes on once it is back;
//   - no member reachable at start: one line naming every member;
//   - over https with client certificates (--rdzv-conf protocol=https,cacert,cert,key), and
//     a member whose certificate another CA signed: one line;
//   - agents in two network namespaces, etcd in one of them: they meet over the veth pair,
//     and the node whose link goes down is left out within the keep-alive budget; once its
//     link is back (within join_timeout) after its lease expired, it joins again as a new
//     node, its old workers gone and new ones started with the new ranks.
// The rounds every backend shares (crash restart, late joiner, SIGTERM, ...) are the
// templated tests of elastic_test.cc.

#include <signal.h>

#include <catch2/catch.hpp>
#include <map>
#include <thread>

#include "e2e/elastic_job.h"
#include "e2e/elastic_meeting.h"
#include "etcd/etcd_certificates.h"
#include "helpers/child_process.h"
#include "helpers/network_namespaces.h"
#include "helpers/temp_dir.h"

using namespace pltrun::test;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

// The worker pids of `round`, by rank.
std::map<int, pid_t> pidsOf(const Round& round) {
  std::map<int, pid_t> pids;
  for (const auto& [rank, record] : round.byRank) pids[rank] = record.pid();
  return pids;
}

// The agent whose workers hold `rank` in `round`.
size_t agentOfRank(ElasticJob& job, const Round& round, int rank) {
  const pid_t parent = round.byRank.at(rank).ppid();
  for (size_t index = 0; index < job.size(); ++index) {
    if (job.agent(index).pid() == parent) return index;
  }
  FAIL("no agent of this job is the parent of rank " << rank);
  return 0;
}

// Every agent but `except` exits 0 once released, and no worker is left.
void releaseAndCheck(const TempDir& dir, ElasticJob& job, std::optional<size_t> except = std::nullopt) {
  release(dir);
  for (size_t index = 0; index < job.size(); ++index) {
    if (except && *except == index) continue;
    Finished result = job.agent(index).wait(kAgentExit);
    INFO("agent " << index << ":\n" << result.err);
    CHECK(result.status == 0);
  }
  checkNoWorkerLeft(dir);
}

// --rdzv-conf's TLS keys for `certificates`, with `caFile` as the trusted CA.
std::string tlsConf(const TestCertificates& certificates, const std::string& caFile) {
  return ",protocol=https,cacert=" + caFile + ",cert=" + certificates.clientCert + ",key=" + certificates.clientKey;
}

}  // namespace

TEST_CASE("on etcd, kill -9 of node rank 0's agent: the survivors re-form at once", "[elastic][etcd]") {
  EtcdMeeting etcd;
  TempDir dir;
  WorkerSweeper sweeper(dir);
  ElasticJob job(dir, "1:3", "rankzero", {}, {testWorker(), "serve", dir.path()});
  etcd.prepare(job);
  for (int node = 0; node < 3; ++node) job.start();
  Round full = waitForRound(dir, 6, 0);
  const size_t victim = agentOfRank(job, full, 0);  // node rank 0: it hosts the workers' store

  const long long killedAt = monotonicNanoseconds();
  job.agent(victim).signal(SIGKILL);
  CHECK(job.agent(victim).wait(10s).status == 128 + SIGKILL);
  Round reformed = waitForRound(dir, 4, full.restart + 1);
  long long latest = 0;
  for (const auto& [rank, record] : reformed.byRank) {
    CHECK(record.var("GROUP_WORLD_SIZE") == "2");
    CHECK(record.ppid() != job.agent(victim).pid());
    latest = std::max(latest, record.startedNs());
  }
  const double seconds = static_cast<double>(latest - killedAt) / 1e9;
  // The goal is 1 s (scripts/bench/elastic.sh measures it); the check leaves room for a loaded machine.
  WARN("etcd: survivors' workers all running " << seconds * 1000 << " ms after kill -9 of node rank 0's agent");
  CHECK(seconds < 5.0);
  releaseAndCheck(dir, job, victim);
  for (size_t index = 0; index < job.size(); ++index) {
    if (index == victim) continue;
    bool lost = false;
    for (const auto& event : eventsNamed(agentEvents(dir, job.runId(), job.agent(index).pid()), "node_left")) {
      lost = lost || event.value("reason", "") == "node_lost";
    }
    CHECK(lost);
  }
}

TEST_CASE("on etcd, an agent that stops answering is found within the keep-alive budget", "[elastic][etcd]") {
  EtcdMeeting etcd;
  TempDir dir;
  WorkerSweeper sweeper(dir);
  // keep_alive 0.5 s x 3: the stopped agent's peer misses its beats after 1.5 s; its lease
  // (2 s, etcd's floor here) is the backstop.
  ElasticJob job(dir, "2:3", "stopped", {}, {testWorker(), "serve", dir.path()},
                 "last_call_timeout=1,join_timeout=30,keep_alive_interval=0.5,keep_alive_max_attempt=3");
  etcd.prepare(job);
  for (int node = 0; node < 3; ++node) job.start();
  Round full = waitForRound(dir, 6, 0);
  const size_t victim = agentOfRank(job, full, 5);
  const auto stoppedAt = std::chrono::steady_clock::now();
  job.agent(victim).signal(SIGSTOP);
  Round reformed = waitForRound(dir, 4, full.restart + 1);
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - stoppedAt;
  WARN("etcd: a SIGSTOPped agent was replaced after " << took.count() << " s");
  CHECK(took < 15s);
  for (const auto& [rank, record] : reformed.byRank) CHECK(record.ppid() != job.agent(victim).pid());
  job.agent(victim).signal(SIGKILL);  // its workers die with it (their parent-death signal)
  job.agent(victim).signal(SIGCONT);
  job.agent(victim).wait(10s);
  releaseAndCheck(dir, job, victim);
}

TEST_CASE("on etcd, killing any one member of 3 (the leader among them) restarts no worker", "[elastic][etcd]") {
  EtcdMeeting etcd(3);
  TempDir dir;
  WorkerSweeper sweeper(dir);
  // A keep-alive budget of 10 s, as a real job's (15 s by default) is well above an election:
  // on a loaded 2-core machine 3 members and 2 agents may stall for seconds.
  ElasticJob job(dir, "2", "members", {}, {testWorker(), "serve", dir.path()},
                 "last_call_timeout=1,join_timeout=30,keep_alive_interval=2,keep_alive_max_attempt=5");
  etcd.prepare(job);
  job.start();
  job.start();
  const Round first = waitForRound(dir, 4, 0);
  // Each member in turn, the others up: whichever leads at the time is killed once.
  for (int member = 0; member < 3; ++member) {
    etcd.cluster.kill(member);
    std::this_thread::sleep_for(3s);  // past an election and several keep-alives and heartbeats
    etcd.cluster.restart(member);
    etcd.cluster.waitUntilAnswering(member);
  }
  std::this_thread::sleep_for(2s);
  const Round still = waitForRound(dir, 4, 0);
  INFO("agent 0:\n" << job.agent(0).stderrSoFar() << "\nagent 1:\n" << job.agent(1).stderrSoFar());
  CHECK(still.restart == first.restart);
  CHECK(pidsOf(still) == pidsOf(first));
  releaseAndCheck(dir, job);
  for (size_t index = 0; index < job.size(); ++index) {
    CHECK(eventsNamed(agentEvents(dir, job.runId(), job.agent(index).pid()), "restart").empty());
  }
}

TEST_CASE("on etcd, losing quorum keeps the workers running and the job goes on when it is back", "[elastic][etcd]") {
  EtcdMeeting etcd(3);
  TempDir dir;
  WorkerSweeper sweeper(dir);
  ElasticJob job(dir, "2", "quorum", {}, {testWorker(), "serve", dir.path()},
                 "last_call_timeout=1,join_timeout=30,keep_alive_interval=2,keep_alive_max_attempt=5");
  etcd.prepare(job);
  job.start();
  job.start();
  const Round first = waitForRound(dir, 4, 0);
  etcd.cluster.kill(1);
  etcd.cluster.kill(2);  // 1 of 3 left: no quorum, nothing can be read or written
  for (size_t index = 0; index < job.size(); ++index) {
    INFO("agent " << index << ": " << job.agent(index).stderrSoFar());
    CHECK(job.agent(index).waitForStderr("workers keep running while it recovers", 30s));
  }
  std::this_thread::sleep_for(2s);
  for (const auto& [rank, pid] : pidsOf(first)) CHECK_FALSE(processGone(pid));
  etcd.cluster.restart(1);
  etcd.cluster.restart(2);
  for (int member = 0; member < 3; ++member) etcd.cluster.waitUntilAnswering(member);
  for (size_t index = 0; index < job.size(); ++index) {
    CHECK(job.agent(index).waitForStderr("the rendezvous store answers again", 30s));
  }
  CHECK(pidsOf(waitForRound(dir, 4, 0)) == pidsOf(first));
  releaseAndCheck(dir, job);
}

TEST_CASE("on etcd, no member reachable at start is one line naming every member", "[elastic][etcd]") {
  const std::string members =
      "127.0.0.1:" + std::to_string(freeLoopbackPort()) + ",127.0.0.1:" + std::to_string(freeLoopbackPort());
  const auto started = std::chrono::steady_clock::now();
  Finished result = runPltrun({"--nnodes", "2", "--rdzv-backend", "etcd", "--rdzv-endpoint", members, "--rdzv-id",
                               "nobody", testWorker(), "exit", "0"});
  INFO(result.err);
  CHECK(result.status != 0);
  CHECK(std::chrono::steady_clock::now() - started < 30s);
  for (const std::string& member : {members.substr(0, members.find(',')), members.substr(members.find(',') + 1)}) {
    CHECK(contains(result.err, member));
  }
  CHECK(contains(result.err, "--rdzv-endpoint"));
  CHECK_FALSE(contains(result.err, "terminate called"));
}

TEST_CASE("on etcd over https with client certificates, agents meet and restart a crashed worker's round",
          "[elastic][etcd][tls]") {
  TempDir dir;
  const TestCertificates certificates(dir.path(), "job");
  EtcdCluster cluster(1, httpsWithClientCertificates(certificates));
  WorkerSweeper sweeper(dir);
  ElasticJob job(dir, "2", "tls", {"--max-restarts", "1"}, {testWorker(), "serve", dir.path()},
                 kConf + tlsConf(certificates, certificates.caFile));
  job.meetAtEtcd(cluster.endpointsText());
  job.start();
  job.start();
  const Round first = waitForRound(dir, 4, 0);
  kill(first.byRank.at(1).pid(), SIGKILL);
  const Round second = waitForRound(dir, 4, first.restart + 1);
  CHECK(second.byRank.at(1).pid() != first.byRank.at(1).pid());
  releaseAndCheck(dir, job);
}

TEST_CASE("on etcd over https, a member whose certificate another CA signed is one line naming the cause",
          "[elastic][etcd][tls]") {
  TempDir dir;
  const TestCertificates certificates(dir.path(), "job");
  const TestCertificates stranger(dir.path(), "stranger");
  EtcdCluster cluster(1, httpsWithClientCertificates(certificates));
  Finished result = runPltrun({"--nnodes", "2", "--rdzv-backend", "etcd", "--rdzv-endpoint", cluster.endpointsText(),
                               "--rdzv-id", "stranger", "--rdzv-conf",
                               "join_timeout=5" + tlsConf(certificates, stranger.caFile), testWorker(), "exit", "0"});
  INFO(result.err);
  CHECK(result.status != 0);
  CHECK(contains(result.err, "certificate verify failed"));
  CHECK(contains(result.err, stranger.caFile));
  CHECK_FALSE(contains(result.err, "terminate called"));
}

TEST_CASE("on etcd, agents in two network namespaces meet, and the node whose link goes down is left out",
          "[elastic][etcd][netns]") {
  NamespacePair namespaces;
  if (!namespacesReady(namespaces)) return;
  EtcdClusterOptions inA;  // etcd runs on "host" a, the agent of b reaches it over the veth pair
  inA.networkNamespace = namespaces.a();
  inA.address = NamespacePair::kAddressA;
  EtcdCluster cluster(1, inA);
  TempDir dir;
  WorkerSweeper sweeper(dir);
  // join_timeout bounds how long the cut-off node keeps its workers: it cannot tell a cut
  // from a lost quorum.
  ElasticJob job(dir, "1:2", "netns-etcd", {}, {testWorker(), "serve", dir.path()},
                 "last_call_timeout=1,join_timeout=10,keep_alive_interval=1,keep_alive_max_attempt=3");
  job.meetAtEtcd(cluster.endpointsText());
  job.start({"/bin/ip", "netns", "exec", namespaces.a()});
  ChildProcess& cutOff = job.start({"/bin/ip", "netns", "exec", namespaces.b()});
  const Round both = waitForRound(dir, 4, 0);
  const std::string master = both.byRank.at(0).var("MASTER_ADDR");
  CHECK((master == NamespacePair::kAddressA || master == NamespacePair::kAddressB));
  for (const auto& [rank, record] : both.byRank) CHECK(record.var("MASTER_ADDR") == master);

  const long long cutNs = monotonicNanoseconds();
  REQUIRE(namespaces.cutB());
  const Round alone = waitForRound(dir, 2, both.restart + 1);
  long long latest = 0;
  for (const auto& [rank, record] : alone.byRank) {
    CHECK(record.ppid() != cutOff.pid());
    latest = std::max(latest, record.startedNs());
  }
  const double seconds = static_cast<double>(latest - cutNs) / 1e9;
  WARN("etcd: the other node's workers running " << seconds << " s after its peer's link went down");
  CHECK(seconds < 3 * 1.0 + 5.0);  // the keep-alive budget (3 x 1 s), and room for a loaded machine

  // The cut-off node reports, keeps its workers for join_timeout, then stops them and itself.
  Finished cutOffResult = cutOff.wait(40s);
  INFO(cutOffResult.err);
  CHECK(cutOffResult.status == 1);
  CHECK(contains(cutOffResult.err, "workers keep running while it recovers"));
  CHECK(contains(cutOffResult.err, "lost the rendezvous store"));
  releaseAndCheck(dir, job, 1);
}

// The cut lasts past the agent's lease (3 s) but well within join_timeout: the agent learns
// that its lease is gone once it reaches etcd again, and comes back as a new node.
TEST_CASE("on etcd, a node cut off past its lease joins again as a new node once its link is back",
          "[elastic][etcd][netns]") {
  NamespacePair namespaces;
  if (!namespacesReady(namespaces)) return;
  EtcdClusterOptions inA;
  inA.networkNamespace = namespaces.a();
  inA.address = NamespacePair::kAddressA;
  EtcdCluster cluster(1, inA);
  TempDir dir;
  WorkerSweeper sweeper(dir);
  ElasticJob job(dir, "1:2", "netns-rejoin", {}, {testWorker(), "serve", dir.path()},
                 "last_call_timeout=1,join_timeout=60,keep_alive_interval=1,keep_alive_max_attempt=3");
  job.meetAtEtcd(cluster.endpointsText());
  job.start({"/bin/ip", "netns", "exec", namespaces.a()});
  ChildProcess& cutOff = job.start({"/bin/ip", "netns", "exec", namespaces.b()});
  const Round both = waitForRound(dir, 4, 0);

  REQUIRE(namespaces.cutB());
  const Round alone = waitForRound(dir, 2, both.restart + 1);
  std::this_thread::sleep_for(4s);  // past the lease's 3 s however the other node noticed the cut
  REQUIRE(namespaces.restoreB());

  const Round again = waitForRound(dir, 4, alone.restart + 1, 60s);
  int onCutOff = 0;
  for (const auto& [rank, record] : again.byRank) onCutOff += record.ppid() == cutOff.pid() ? 1 : 0;
  CHECK(onCutOff == 2);
  for (const auto& [rank, record] : both.byRank) {
    if (record.ppid() == cutOff.pid()) CHECK(kill(record.pid(), 0) != 0);  // its old workers are gone
  }
  release(dir);
  for (size_t index = 0; index < job.size(); ++index) {
    Finished result = job.agent(index).wait(kAgentExit);
    INFO("agent " << index << ":\n" << result.err);
    CHECK(result.status == 0);
    if (index == 1) CHECK(contains(result.err, "s without etcd; joining again as a new node"));
  }
  checkNoWorkerLeft(dir);
  const auto expired = eventsNamed(agentEvents(dir, job.runId(), cutOff.pid()), "lease_expired");
  REQUIRE(expired.size() == 1);
  CHECK(expired.front().value("seconds_without_etcd", 0.0) > 3.0);  // the lease's time to live
}

TEST_CASE("on etcd, 12 rounds keep only the last rounds' keys", "[elastic][etcd][bounded]") {
  // Node rank 0 of round R deletes round R-2's keys, on etcd as on c10d.
  EtcdMeeting etcd;
  TempDir dir;
  // Every worker fails, node rank 0's first (--max-node-blames would exclude it: off here).
  ElasticJob job(dir, "2", "etcd-rounds", {"--max-restarts", "12", "--max-node-blames", "0"},
                 {"--no-python", "/bin/sh", "-c", "[ \"$TORCHELASTIC_RESTART_COUNT\" -ge 12 ]"});
  etcd.prepare(job);
  for (int node = 0; node < 2; ++node) job.start();
  for (const Finished& end : job.waitAll(120s)) {
    INFO(end.err.substr(end.err.size() > 3000 ? end.err.size() - 3000 : 0));
    CHECK(end.status == 0);
  }
  pltrun::etcd::EtcdClient client(etcd.cluster.clientOptions());
  const size_t keys = client.getPrefix("/pltrun/rdzv/etcd-rounds/").kvs.size();
  INFO("keys left: " << keys);
  CHECK(keys > 0);
  CHECK(keys < 60);  // 13 rounds kept would be about 13 x 13 for 2 nodes of 2 workers
}

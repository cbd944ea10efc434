// `pltrun status` against live elastic jobs of real agents: the text and the JSON while the
// job waits for a node, runs, has restarted, has lost a node, and has ended, and the exit
// status of each. The agents meet at a standalone pltrun-store, which outlives them, so that
// the end can be read too, or at a real etcd member.

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cctype>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <thread>

#include "e2e/elastic_job.h"
#include "e2e/elastic_meeting.h"
#include "e2e/foreign_store_writes.h"
#include "helpers/child_process.h"
#include "helpers/loopback_listener.h"
#include "helpers/temp_dir.h"
#include "pltrun/tcp_store.h"

using namespace pltrun::test;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

// An agent of the job, which expects the nodes node-a and node-b (this one is `name`).
std::vector<std::string> agentCommand(const std::string& endpoint, const TempDir& dir, const std::string& name) {
  return pltrunCommand({"--nnodes", "2", "--nproc-per-node", "2", "--rdzv-endpoint", endpoint, "--rdzv-id", "watched",
                        "--rdzv-conf", kConf + ",is_host=0,expected_hosts=node-a,node-b,node_name=" + name,
                        "--max-restarts", "1", "--term-timeout", "5", testWorker(), "serve", dir.path()});
}

Finished status(const std::string& endpoint, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args = {"status", "--rdzv-endpoint", endpoint, "--rdzv-id", "watched"};
  args.insert(args.end(), extra.begin(), extra.end());
  return runPltrun(args);
}

json statusJson(const std::string& endpoint) {
  Finished run = status(endpoint, {"--json"});
  INFO(run.err);
  REQUIRE_FALSE(run.out.empty());
  json value = json::parse(run.out);
  CHECK(value["exit_status"] == run.status);
  return value;
}

// Polls the JSON until `done` holds (30 s at most): a state the agents reach on their own.
json statusWhen(const std::string& endpoint, const std::function<bool(const json&)>& done) {
  json value;
  for (int attempt = 0; attempt < 60; ++attempt) {
    value = statusJson(endpoint);
    if (done(value)) return value;
    std::this_thread::sleep_for(500ms);
  }
  FAIL("status never reached the expected state; last: " << value.dump());
  return value;
}

}  // namespace

TEST_CASE("pltrun status follows a 2-agent job: waiting, running, restarted, ended", "[status][elastic]") {
  TempDir dir;
  StandaloneStore store(dir);
  const std::string endpoint = store.endpoint();

  ChildProcess first(agentCommand(endpoint, dir, "node-a"));
  // The node not started yet is named (the first agent publishes who is missing).
  json waiting = statusWhen(endpoint, [](const json& v) {
    return v["state"] == "waiting" && v["joined"] == 1 && v["missing"] == json{"node-b"};
  });
  CHECK(waiting["exit_status"] == 1);
  CHECK(waiting["nodes"][0]["pid"] == first.pid());
  Finished waitingText = status(endpoint);
  CHECK(waitingText.status == 1);
  CHECK_THAT(waitingText.out, Catch::StartsWith("run watched at " + endpoint +
                                                ": waiting for nodes in round 0: 1 of 2 joined (1 missing to start)"));
  CHECK_THAT(waitingText.out, Catch::Contains("\n  missing: node-b\n"));

  ChildProcess second(agentCommand(endpoint, dir, "node-b"));
  waitForRound(dir, 4, 0);
  json running = statusWhen(endpoint, [](const json& v) {
    return v["state"] == "running" && v["nodes"].size() == 2 && v["nodes"][1]["state"] == "running";
  });
  CHECK(running["exit_status"] == 0);
  CHECK(running["max_restarts"] == 1);
  CHECK(running["min_nodes"] == 2);
  for (int node = 0; node < 2; ++node) {
    const json& row = running["nodes"][node];
    CHECK(row["node_rank"] == node);
    CHECK(row["ranks"] == json{2 * node, 2 * node + 1});
    CHECK(row["workers_running"] == 2);
    REQUIRE(row["heartbeat_age_s"].is_number());
    CHECK(row["heartbeat_age_s"].get<double>() < 2.0);  // keep_alive_interval=1
  }
  std::set<pid_t> pids = {running["nodes"][0]["pid"].get<pid_t>(), running["nodes"][1]["pid"].get<pid_t>()};
  CHECK(pids == std::set<pid_t>{first.pid(), second.pid()});
  Finished runningText = status(endpoint);
  CHECK(runningText.status == 0);
  CHECK_THAT(runningText.out,
             Catch::Contains("running round 0 on 2 node(s) of 2; 0 worker failure(s) of --max-restarts 1"));

  // A worker killed: the job restarts once (round 1).
  const Round round0 = waitForRound(dir, 4, 0);
  ::kill(round0.byRank.at(3).pid(), SIGKILL);
  waitForRound(dir, 4, 1);
  json restarted = statusWhen(endpoint, [](const json& v) {
    return v["state"] == "running" && v["round"] == 1 && v["nodes"].size() == 2 &&
           v["nodes"][0]["state"] == "running" && v["nodes"][1]["state"] == "running";
  });
  CHECK(restarted["restarts"] == 1);
  CHECK(restarted["worker_failures"] == 1);

  release(dir);
  CHECK(first.wait(kAgentExit).status == 0);
  CHECK(second.wait(kAgentExit).status == 0);
  json ended = statusJson(endpoint);
  CHECK(ended["state"] == "finished");
  CHECK(ended["job_exit_status"] == 0);
  CHECK(ended["exit_status"] == 0);
  CHECK(ended["end"]["reason"] == "succeeded");
  Finished endedText = status(endpoint);
  CHECK_THAT(endedText.out, Catch::Contains("finished with status 0"));
}

TEST_CASE("pltrun status shows each node's slowest rank from its workers' heartbeats", "[status][elastic][stall]") {
  TempDir dir;
  StandaloneStore store(dir);
  const std::string endpoint = store.endpoint();
  // C++ workers beating through libpltrun every 20 ms for 12 s, none of them stalling.
  auto agent = [&](const std::string& name) {
    return pltrunCommand({"--nnodes", "2", "--nproc-per-node", "2", "--rdzv-endpoint", endpoint, "--rdzv-id", "watched",
                          "--rdzv-conf", kConf + ",is_host=0,node_name=" + name, heartbeatWorker(), "600", "-1"});
  };
  ChildProcess first(agent("node-a"));
  ChildProcess second(agent("node-b"));
  json running = statusWhen(endpoint, [](const json& v) {
    return v["state"] == "running" && v["nodes"].size() == 2 && v["nodes"][0]["slowest_rank"].is_number() &&
           v["nodes"][1]["slowest_rank"].is_number();
  });
  for (int node = 0; node < 2; ++node) {
    const json& row = running["nodes"][node];
    INFO(row.dump());
    const int rank = row["slowest_rank"].get<int>();
    CHECK((rank == 2 * node || rank == 2 * node + 1));  // one of this node's own ranks
    REQUIRE(row["slowest_step"].is_number_integer());
    CHECK(row["slowest_step"].get<long long>() >= 0);
    REQUIRE(row["slowest_heartbeat_age_s"].is_number());
    CHECK(row["slowest_heartbeat_age_s"].get<double>() < 1.0);  // they beat every 20 ms
  }
  Finished text = status(endpoint);
  CHECK_THAT(text.out, Catch::Contains("slowest rank") && Catch::Contains(", step "));
  CHECK(first.wait(60s).status == 0);
  CHECK(second.wait(60s).status == 0);
}

TEST_CASE("pltrun status names the node that is missing while the job re-forms", "[status][elastic]") {
  TempDir dir;
  StandaloneStore store(dir);
  const std::string endpoint = store.endpoint();
  ChildProcess first(agentCommand(endpoint, dir, "node-a"));
  ChildProcess second(agentCommand(endpoint, dir, "node-b"));
  waitForRound(dir, 4, 0);
  second.signal(SIGKILL);
  second.wait(10s);
  // The survivor re-forms and waits in round 1 for a second node, which does not come.
  // The survivor names it, once in slot 1 of round 1 it has published who is missing.
  json reforming = statusWhen(
      endpoint, [](const json& v) { return v["round"] == 1 && v["joined"] == 1 && v["missing"] == json{"node-b"}; });
  CHECK(reforming["state"] == "re-forming");
  CHECK(reforming["exit_status"] == 1);
  // So do its own waiting lines.
  CHECK(
      first.waitForStderr("waiting for nodes: 1/2 joined (1 missing to start), missing: node-b; join timeout in", 10s));
  Finished text = status(endpoint);
  CHECK(text.status == 1);
  CHECK_THAT(text.out, Catch::Contains("\n  missing: node-b\n"));
  first.signal(SIGTERM);
  first.wait(kAgentExit);
}

TEST_CASE("pltrun status reads an etcd job too: waiting with the missing node named, running, ended",
          "[status][elastic][etcd]") {
  EtcdMeeting etcd;
  TempDir dir;
  WorkerSweeper sweeper(dir);
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  ElasticJob job(dir, "2", "etcd-watched", {}, {testWorker(), "serve", dir.path()},
                 kConf + ",expected_hosts=" + std::string(host) + ",gpu-ghost");
  etcd.prepare(job);
  auto etcdStatus = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> args = {
        "status",    "--rdzv-backend", "etcd", "--rdzv-endpoint", etcd.cluster.endpointsText(),
        "--rdzv-id", "etcd-watched"};
    args.insert(args.end(), extra.begin(), extra.end());
    return runPltrun(args);
  };
  auto etcdJson = [&](const std::function<bool(const json&)>& done) {
    json value;
    for (int attempt = 0; attempt < 60; ++attempt) {
      Finished run = etcdStatus({"--json"});
      INFO(run.err);
      REQUIRE_FALSE(run.out.empty());  // "unknown" (2) until the first agent joins, but always an answer
      value = json::parse(run.out);
      if (done(value)) return value;
      std::this_thread::sleep_for(500ms);
    }
    FAIL("status never reached the expected state; last: " << value.dump());
    return value;
  };

  job.start();
  json waiting = etcdJson([](const json& v) { return v["state"] == "waiting" && v["missing"] == json{"gpu-ghost"}; });
  CHECK(waiting["exit_status"] == 1);
  CHECK(waiting["nodes"][0]["pid"] == job.agent(0).pid());
  CHECK(waiting["endpoint"] == etcd.cluster.endpointsText());

  job.start();
  waitForRound(dir, 4, 0);
  json running = etcdJson([](const json& v) {
    return v["state"] == "running" && v["nodes"].size() == 2 && v["nodes"][1]["state"] == "running";
  });
  CHECK(running["exit_status"] == 0);
  CHECK(running["nodes"][0]["heartbeat_age_s"].is_number());
  Finished text = etcdStatus({});
  CHECK(text.status == 0);
  CHECK_THAT(text.out, Catch::Contains("running round 0 on 2 node(s) of 2"));

  release(dir);
  for (size_t index = 0; index < job.size(); ++index) CHECK(job.agent(index).wait(kAgentExit).status == 0);
  json ended = etcdJson([](const json& v) { return v["state"] == "finished"; });
  CHECK(ended["job_exit_status"] == 0);
  CHECK(etcdStatus({}).status == 0);
}

TEST_CASE("pltrun status: a wrong endpoint or run id is one line and status 2", "[status][e2e]") {
  TempDir dir;
  StandaloneStore store(dir);
  Finished wrongId = runPltrun({"status", "--rdzv-endpoint", store.endpoint(), "--rdzv-id", "nobody"});
  CHECK(wrongId.status == 2);
  CHECK_THAT(wrongId.out, Catch::Contains("no such job"));
  Finished nothing = runPltrun({"status", "--rdzv-endpoint", "127.0.0.1:" + std::to_string(freeLoopbackPort())});
  CHECK(nothing.status == 2);
  CHECK_THAT(nothing.err, Catch::StartsWith("pltrun status: error: nothing answers at 127.0.0.1:"));
  CHECK(std::count(nothing.err.begin(), nothing.err.end(), '\n') == 1);
  const std::string deadMembers =
      "127.0.0.1:" + std::to_string(freeLoopbackPort()) + ",127.0.0.1:" + std::to_string(freeLoopbackPort());
  Finished noEtcd = runPltrun({"status", "--rdzv-backend", "etcd", "--rdzv-endpoint", deadMembers});
  CHECK(noEtcd.status == 2);
  CHECK_THAT(noEtcd.err, Catch::StartsWith("pltrun status: error: etcd: no endpoint answered") &&
                             Catch::Contains("check --rdzv-endpoint"));
  CHECK(std::count(noEtcd.err.begin(), noEtcd.err.end(), '\n') == 1);
  Finished noEndpoint = runPltrun({"status"});
  CHECK(noEndpoint.status == 2);
  CHECK_THAT(noEndpoint.err, Catch::Contains("--rdzv-endpoint is required"));
}

namespace {

int portOf(const StandaloneStore& store) { return std::stoi(store.endpoint().substr(store.endpoint().rfind(':') + 1)); }

}  // namespace

TEST_CASE("pltrun status ends against absurd counts and intervals in the store", "[status][e2e][bounded]") {
  TempDir dir;
  StandaloneStore store(dir);
  writeJobKeys(portOf(store), "absurd",
               {{"round", "0"},
                {"r0/count", "1000000000"},
                {"r0/complete", R"({"nnodes":1000000000,"world_size":1,"failures":0})"},
                {"r0/slot/1", R"({"id":"a","host":"h","addr":"127.0.0.1","nproc":1,"keep_alive_ms":100000000})"}});
  const auto start = std::chrono::steady_clock::now();
  Finished run = runPltrun({"status", "--rdzv-endpoint", store.endpoint(), "--rdzv-id", "absurd", "--timeout", "5"});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO(run.out << run.err);
  CHECK(seconds < 20);  // a 44 h heartbeat wait and 4e9 reads before
  CHECK(run.status >= 0);
  CHECK(run.status <= 2);
  CHECK_THAT(run.err, !Catch::Contains("internal error"));
  // Within --timeout it shows the job, saying how much was cut; past it, one line and exit 2.
  if (run.status != 2) CHECK_THAT(run.out, Catch::Contains("more than 4096 nodes"));
}

TEST_CASE("pltrun status: a round end of the wrong type is named, exit 2", "[status][e2e][bounded]") {
  TempDir dir;
  StandaloneStore store(dir);
  writeJobKeys(portOf(store), "confused", {{"round", "0"}, {"closed", R"({"reason":"worker_failed","host":5})"}});
  Finished run = runPltrun({"status", "--rdzv-endpoint", store.endpoint(), "--rdzv-id", "confused"});
  INFO(run.out << run.err);
  CHECK(run.status == 2);
  CHECK_THAT(run.out, Catch::Contains("the store holds a value at 'closed' that is not pltrun's"));
}

TEST_CASE("pltrun status: a store that never answers is given up on after --timeout", "[status][e2e][bounded]") {
  // A listener that never accepts: connections complete in the kernel, requests go unanswered.
  LoopbackListener listener;
  const std::string endpoint = "127.0.0.1:" + std::to_string(listener.port());
  const auto start = std::chrono::steady_clock::now();
  Finished run = runPltrun({"status", "--rdzv-endpoint", endpoint, "--rdzv-id", "silent", "--timeout", "2"});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO(run.err);
  CHECK(run.status == 2);
  CHECK(seconds < 10);
  CHECK(std::count(run.err.begin(), run.err.end(), '\n') == 1);
}

namespace {

// A job's keys as another local user may write them into an open store (issue 42): slot 1's
// host name carries a line of its own and a terminal escape, slot 2's state claims
// 2147483647 workers of its 1.
const StoreKeys kForgedJob = {
    {"round", "0"},
    {"r0/count", "2"},
    {"r0/complete", R"({"nnodes":2,"world_size":2,"failures":0})"},
    {"r0/slot/1",
     R"({"id":"x","host":"evil\n[forged] line\u001b[2J","addr":"127.0.0.1","nproc":1,"keep_alive_ms":100})"},
    {"r0/slot/2", R"({"id":"b","host":"node-b","addr":"127.0.0.2","nproc":1,"keep_alive_ms":100})"},
    {"r0/assign/2", R"({"node_rank":1,"nnodes":2,"world_size":2,"first_rank":1,"rank0_addr":"127.0.0.1"})"},
    {"r0/state/2", R"({"state":"running","workers":2147483647})"}};

// No byte of `text` is a control character but the newlines that end its lines, and no line
// starts as `forged`.
void checkNoForgedLine(const std::string& text, const std::string& forged) {
  INFO(text);
  CHECK(std::none_of(text.begin(), text.end(), [](char byte) { return byte != '\n' && std::iscntrl(byte); }));
  CHECK_THAT("\n" + text, !Catch::Contains("\n" + forged));
}

}  // namespace

TEST_CASE("pltrun status: a store value no agent writes forges no line, is named, and exits 2",
          "[status][e2e][bounded][other_user]") {
  TempDir dir;
  StandaloneStore store(dir);
  writeForeignKeys(portOf(store), "forged", kForgedJob);

  Finished text = runPltrun({"status", "--rdzv-endpoint", store.endpoint(), "--rdzv-id", "forged"});
  CHECK(text.status == 2);
  checkNoForgedLine(text.out, "[forged]");
  checkNoForgedLine(text.err, "[forged]");
  CHECK_THAT(text.out, Catch::Contains("the store holds a value at 'r0/slot/1' that is not pltrun's") &&
                           Catch::Contains("the store holds a value at 'r0/state/2' that is not pltrun's") &&
                           !Catch::Contains("2147483647"));

  Finished json = runPltrun({"status", "--rdzv-endpoint", store.endpoint(), "--rdzv-id", "forged", "--json"});
  CHECK(json.status == 2);
  checkNoForgedLine(json.out, "[forged]");
  CHECK(std::count(json.out.begin(), json.out.end(), '\n') == 1);
  const nlohmann::json value = nlohmann::json::parse(json.out);
  CHECK(value["malformed_keys"] == nlohmann::json{"r0/slot/1", "r0/state/2"});
  CHECK(value["exit_status"] == 2);
  REQUIRE(value["nodes"].size() == 1);
  CHECK(value["nodes"][0]["host"] == "node-b");
  CHECK(value["nodes"][0]["workers_running"].is_null());
}

TEST_CASE("pltrun status: a job's end written by another user stays within the summary line",
          "[status][e2e][bounded][other_user]") {
  TempDir dir;
  StandaloneStore store(dir);
  writeForeignKeys(
      portOf(store), "forged-end",
      {{"round", "0"},
       {"closed", R"({"reason":"node_lost","host":"x\n[forged] line\u001b[31m","message":"m\r\n[forged] too",)"
                  R"("status":3,"failures":0,"final":true})"}});
  Finished text = runPltrun({"status", "--rdzv-endpoint", store.endpoint(), "--rdzv-id", "forged-end"});
  CHECK(text.status == 2);  // a job that failed
  checkNoForgedLine(text.out, "[forged]");
  CHECK_THAT(text.out, Catch::Contains("finished with status 3: node x\\x0a[forged] line\\x1b[31m lost "
                                       "(m\\x0d\\x0a[forged] too)"));
}

// Node health (issue 46) with the real pltrun: `pltrun health` alone (the fake inventory,
// the fake NVML library, a failing and a slow --health-check, --json, a bad flag); a static
// job on an unhealthy node does not start (its status, one line, failure.json, events); in
// elastic --nnodes 2:3 jobs a node whose GPU is lost or asks for a recovery action stays
// out while the others run, and in network namespaces a node whose --health-check starts
// failing leaves at the next round, where a waiting spare takes its place.

#include <signal.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "e2e/elastic_job.h"
#include "helpers/child_process.h"
#include "helpers/json_lines.h"
#include "helpers/network_namespaces.h"
#include "helpers/temp_dir.h"
#include "helpers/worker_env_file.h"

using namespace pltrun::test;
using namespace std::chrono_literals;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

// No site file, no fake GPUs or NVML from the test's own environment.
const std::vector<std::string> kCleanEnv{"PLTRUN_CONFIG=", "PLTRUN_FAKE_GPUS", "PLTRUN_FAKE_GPU_HEALTH",
                                         "LD_LIBRARY_PATH"};

std::vector<std::string> envWith(std::vector<std::string> extra) {
  std::vector<std::string> env = kCleanEnv;
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

json checkNamed(const json& health, const std::string& name) {
  for (const json& check : health.at("checks")) {
    if (check.at("name") == name) return check;
  }
  FAIL("no check " << name << " in " << health.dump());
  return {};
}

}  // namespace

TEST_CASE("pltrun health shows each check's verdict and exits 0 on a healthy node", "[health]") {
  const Finished healthy = runPltrun({"health"}, envWith({"PLTRUN_FAKE_GPUS=2"}));
  INFO(healthy.out << healthy.err);
  CHECK(healthy.status == 0);
  for (const char* line : {"gpu count: passed (2 GPU(s))", "gpu lost: passed (2 GPU(s) fine)",
                           "recovery action: passed", "ecc: passed", "retired pages: passed"}) {
    CHECK_THAT(healthy.out, Contains(line));
  }
  CHECK_THAT(healthy.out, Contains("\nhealthy\n"));
  const Finished json = runPltrun({"health", "--json", "--health-check", "echo fine"}, envWith({"PLTRUN_FAKE_GPUS=1"}));
  CHECK(json.status == 0);
  const auto parsed = json::parse(json.out);
  CHECK(parsed["healthy"] == true);
  CHECK(checkNamed(parsed, "health-check")["detail"] == "'echo fine' exited with status 0: fine");
}

TEST_CASE("pltrun health: a lost GPU, a recovery action and a failing --health-check are unhealthy", "[health]") {
  const Finished lost = runPltrun({"health", "--health-check", "echo GPU 3 is hot; exit 4"},
                                  envWith({"PLTRUN_FAKE_GPUS=4", "PLTRUN_FAKE_GPU_HEALTH=1=lost,2=recovery"}));
  INFO(lost.out << lost.err);
  CHECK(lost.status == 1);
  CHECK_THAT(lost.out, Contains("gpu lost: FAILED (GPU 1: lost, fallen off the bus)"));
  CHECK_THAT(lost.out, Contains("recovery action: FAILED (GPU 2: recovery action: reset the GPU)"));
  CHECK_THAT(lost.out,
             Contains("health-check: FAILED ('echo GPU 3 is hot; exit 4' exited with status 4: GPU 3 is hot)"));
  CHECK_THAT(lost.out, Contains("unhealthy: gpu lost: GPU 1"));
  const Finished json = runPltrun({"health", "--json", "--expected-gpus", "8"}, envWith({"PLTRUN_FAKE_GPUS=4"}));
  CHECK(json.status == 1);
  CHECK(json::parse(json.out)["reason"] == "gpu count: this node sees 4 GPU(s), 8 expected");
}

TEST_CASE("pltrun health reads NVML's answers: lost, recovery action, ECC, remapped rows", "[health]") {
  const Finished sick = runPltrun(
      {"health", "--json"}, envWith({"LD_LIBRARY_PATH=" FAKE_NVML_DIR, "FAKE_NVML_GPUS=1a:H100,3b:H100,5c:H100,7d:H100",
                                     "FAKE_NVML_HEALTH=0=lost,1=recovery,2=ecc,3=remap"}));
  INFO(sick.out << sick.err);
  CHECK(sick.status == 1);
  const json health = json::parse(sick.out);
  CHECK(checkNamed(health, "gpu count")["detail"] == "4 GPU(s)");
  CHECK(checkNamed(health, "gpu lost")["detail"] == "GPU 0: lost, fallen off the bus");
  CHECK(checkNamed(health, "recovery action")["detail"] == "GPU 1: recovery action: reset the GPU");
  CHECK(checkNamed(health, "ecc")["detail"] == "GPU 2: 2 uncorrectable ECC error(s) since the driver loaded");
  CHECK(checkNamed(health, "retired pages")["detail"] == "GPU 3: row remapping failed (the GPU needs service)");
  // Where the driver does not report ECC, the check is skipped, and says why.
  const Finished noEcc = runPltrun(
      {"health"}, envWith({"LD_LIBRARY_PATH=" FAKE_NVML_DIR, "FAKE_NVML_GPUS=1a:H100", "FAKE_NVML_HEALTH=0=noecc"}));
  CHECK(noEcc.status == 0);
  CHECK_THAT(noEcc.out, Contains("ecc: skipped (GPU 0: not supported by this GPU or driver)"));
  // No driver at all: every GPU check skipped, the node healthy.
  const Finished none = runPltrun({"health"}, envWith({"LD_LIBRARY_PATH=/nonexistent"}));
  CHECK_THAT(none.out, Contains("gpu lost: skipped ("));
}

TEST_CASE("pltrun health: a slow --health-check is killed at its timeout, and bad flags exit 2", "[health]") {
  const auto started = std::chrono::steady_clock::now();
  const Finished slow =
      runPltrun({"health", "--health-check", "echo checking; sleep 60", "--health-check-timeout", "0.5"}, kCleanEnv);
  CHECK(std::chrono::steady_clock::now() - started < 20s);
  CHECK(slow.status == 1);
  CHECK_THAT(slow.out, Contains("did not finish within 0.5 s: checking"));
  const Finished bad = runPltrun({"health", "--health-check-timeout", "soon"}, kCleanEnv);
  CHECK(bad.status == 2);
  CHECK_THAT(bad.err, Contains("pltrun health: error: --health-check-timeout"));
  CHECK(bad.err.find('\n') == bad.err.size() - 1);  // one line
  CHECK(runPltrun({"health", "--no-such-flag"}, kCleanEnv).status == 2);
}

TEST_CASE("pltrun health and a job take --health-check from the site config", "[health]") {
  TempDir dir;
  { std::ofstream(dir / "pltrun.toml") << "health-check = \"echo site check; exit 9\"\n"; }
  const std::vector<std::string> env{"PLTRUN_CONFIG=" + dir / "pltrun.toml", "PLTRUN_FAKE_GPUS", "LD_LIBRARY_PATH"};
  const Finished site = runPltrun({"health"}, env);
  CHECK(site.status == 1);
  CHECK_THAT(site.out, Contains("'echo site check; exit 9' exited with status 9: site check"));
  const Finished job = runPltrun({"--nproc-per-node", "1", "--no-python", "/bin/true"}, env);
  CHECK(job.status == 1);
  CHECK_THAT(job.err, Contains("so the job does not start: health-check: 'echo site check; exit 9'"));
}

TEST_CASE("a static job on an unhealthy node does not start, and says why", "[health]") {
  TempDir dir;
  const Finished job =
      runPltrun({"--nproc-per-node", "2", "--run-id", "sick", "--log-dir", dir / "logs", "--health-check",
                 "echo scratch disk full >&2; exit 1", "--no-python", "/bin/sh", "-c", "touch " + dir / "worker.ran"},
                kCleanEnv);
  INFO(job.err);
  CHECK(job.status == 1);
  CHECK_THAT(job.err, Contains("is unhealthy, so the job does not start: health-check: 'echo scratch disk full >&2; "
                               "exit 1' exited with status 1: scratch disk full"));
  CHECK_FALSE(std::filesystem::exists(dir / "worker.ran"));
  const json failure = json::parse(readFile(dir / "logs/sick/failure.json"));
  CHECK(failure["root_cause"].is_null());
  REQUIRE(failure["excluded_nodes"].size() == 1);
  CHECK(failure["excluded_nodes"][0]["kind"] == "unhealthy");
  CHECK_THAT(failure["excluded_nodes"][0]["reason"].get<std::string>(), Contains("scratch disk full"));
  const auto events = readJsonLines(dir / "logs/sick/events.jsonl");
  REQUIRE(eventsNamed(events, "node_unhealthy").size() == 1);
  CHECK(eventsNamed(events, "node_unhealthy")[0]["checks"].size() == 6);  // five GPU checks, the command
  // A lost fake GPU stops a GPU job the same way; a healthy node runs it.
  const Finished gpu = runPltrun({"--nproc-per-node", "gpu", "--no-python", "/bin/true"},
                                 envWith({"PLTRUN_FAKE_GPUS=2", "PLTRUN_FAKE_GPU_HEALTH=0=lost"}));
  CHECK(gpu.status == 1);
  CHECK_THAT(gpu.err, Contains("gpu lost: GPU 0: lost, fallen off the bus"));
  CHECK(runPltrun({"--nproc-per-node", "gpu", "--no-python", "/bin/true"}, envWith({"PLTRUN_FAKE_GPUS=2"})).status ==
        0);
}

TEST_CASE("an elastic node whose GPU is lost or needs recovery stays out, and the job runs on the others",
          "[health][elastic]") {
  for (const std::string fault : {"1=lost", "0=recovery"}) {
    TempDir dir;
    WorkerSweeper sweeper(dir);
    ElasticJob job(dir, "2:3", "gpu" + fault.substr(2), {"--health-check-interval", "1"},
                   {testWorker(), "env", dir.path()});
    job.start();
    ChildProcess& sick = job.start({"/usr/bin/env", "PLTRUN_FAKE_GPUS=2", "PLTRUN_FAKE_GPU_HEALTH=" + fault});
    REQUIRE(sick.waitForStderr("does not join the job", 30s));
    job.start();
    std::vector<Finished> results = job.waitAll();
    INFO(fault << describe(results));
    CHECK(results[0].status == 0);
    CHECK(results[2].status == 0);
    // The sick node ends with the job, saying it stayed out: status 1.
    CHECK(results[1].status == 1);
    CHECK_THAT(results[1].err, Contains("this node is unhealthy, so it does not join the job: "));
    CHECK_THAT(results[1].err, Contains("while this node was out of it, unhealthy"));
    CHECK_THAT(results[1].err, Contains(fault == "1=lost" ? "gpu lost: GPU 1: lost" : "recovery action: GPU 0"));
    // Four workers (two nodes), none of them the sick node's.
    for (int rank = 0; rank < 4; ++rank) CHECK(workerEnvironment(dir, rank)["WORLD_SIZE"] == "4");
    CHECK_FALSE(std::filesystem::exists(dir / "env_4.json"));
    const auto events = agentEvents(dir, job.runId(), sick.pid());
    REQUIRE_FALSE(eventsNamed(events, "node_unhealthy").empty());
    CHECK(eventsNamed(events, "rendezvous_complete").empty());
    checkNoWorkerLeft(dir);
  }
}

TEST_CASE("in network namespaces a node whose --health-check fails stays out and a waiting spare takes its place",
          "[health][elastic][netns]") {
  BridgedNamespaces hosts(4);
  if (!hosts.error().empty()) {
    WARN("skipped: " << hosts.error());
    return;
  }
  TempDir dir;
  WorkerSweeper sweeper(dir);
  ElasticJob job(dir, "2:3", "spare", {"--max-restarts", "3", "--health-check-interval", "1"},
                 {testWorker(), "serve", dir.path()});
  const auto in = [&hosts](int host) {
    return std::vector<std::string>{"/bin/ip", "netns", "exec", hosts.spoke(host)};
  };
  const std::string store = BridgedNamespaces::spokeAddress(0);
  ChildProcess& first = job.start(in(0), store);
  ChildProcess& second = job.start(in(1), store);
  ChildProcess& sick =
      job.start(in(2), store, {"--health-check", "test ! -e " + dir / "sick" + " || { echo NIC down; exit 1; }"});
  const Round full = waitForRound(dir, 6, 0);
  ChildProcess& spare = job.start(in(3), store);
  REQUIRE(spare.waitForStderr("this node waits for a place", 30s));
  // The third node's check starts failing; a worker's crash ends the round.
  { std::ofstream(dir / "sick") << "1"; }
  kill(full.byRank.at(0).pid(), SIGKILL);
  REQUIRE(sick.waitForStderr("does not join the job: health-check", 30s));
  // The job re-forms on three nodes again: the two that stayed, and the spare.
  const Round after = waitForRound(dir, 6, 1, 60s);
  std::set<pid_t> agents;
  for (const auto& [rank, record] : after.byRank) agents.insert(record.ppid());
  INFO("round " << after.restart << " ran under agents " << agents.size());
  CHECK(agents.count(sick.pid()) == 0);
  CHECK(agents.count(spare.pid()) == 1);
  CHECK(agents.count(first.pid()) == 1);
  CHECK(agents.count(second.pid()) == 1);
  { std::ofstream(dir / "release") << "1"; }
  std::vector<Finished> results = job.waitAll();
  INFO(describe(results));
  for (size_t agent : {0, 1, 3}) CHECK(results[agent].status == 0);
  CHECK(results[2].status == 1);  // out since round 0 ended, until the job did
  CHECK_THAT(results[2].err, Contains("this node is unhealthy, so it does not join the job: health-check: 'test ! -e"));
  CHECK_THAT(results[2].err, Contains("exited with status 1: NIC down"));
  const auto events = agentEvents(dir, job.runId(), sick.pid());
  REQUIRE(eventsNamed(events, "node_unhealthy").size() == 1);     // once, not at every recheck
  CHECK(eventsNamed(events, "rendezvous_complete").size() == 1);  // round 0 only
  checkNoWorkerLeft(dir);
}

TEST_CASE("an elastic node that becomes healthy again joins the running job", "[health][elastic]") {
  TempDir dir;
  WorkerSweeper sweeper(dir);
  { std::ofstream(dir / "sick") << "1"; }
  ElasticJob job(dir, "2:3", "healed", {"--health-check-interval", "0.5"}, {testWorker(), "serve", dir.path()});
  job.start();
  ChildProcess& healed = job.start({}, "127.0.0.1", {"--health-check", "test ! -e " + dir / "sick"});
  REQUIRE(healed.waitForStderr("does not join the job", 30s));
  job.start();
  waitForRound(dir, 4, 0);
  std::filesystem::remove(dir / "sick");
  // It asks the running job to re-form with it: three nodes, six ranks.
  waitForRound(dir, 6, 1);
  { std::ofstream(dir / "release") << "1"; }
  std::vector<Finished> results = job.waitAll();
  INFO(describe(results));
  for (const Finished& result : results) CHECK(result.status == 0);
  CHECK_THAT(results[1].err, Contains("this node is healthy again; joining the job"));
  const auto events = agentEvents(dir, job.runId(), healed.pid());
  REQUIRE(eventsNamed(events, "node_unhealthy").size() == 1);
  REQUIRE(eventsNamed(events, "node_healthy").size() == 1);
  CHECK_THAT(eventsNamed(events, "node_healthy")[0]["previous_reason"].get<std::string>(), Contains("health-check"));
  checkNoWorkerLeft(dir);
}

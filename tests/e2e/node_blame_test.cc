// Blame per node (--max-node-blames, issue 46) with real agents on loopback: a node whose
// workers end two rounds in a row while the other nodes' run is excluded for the rest of the
// run (a line, a node_excluded event, the exclusions key `pltrun status` lists), its agent
// leaves, and the job finishes on the rest; without enough nodes left, the job fails with the
// excluded nodes in failure.json. The agents meet at a standalone pltrun-store, which
// outlives them, so that status can read the job to its end.

#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "e2e/elastic_job.h"
#include "helpers/child_process.h"
#include "helpers/json_lines.h"
#include "helpers/temp_dir.h"

using namespace pltrun::test;
using namespace std::chrono_literals;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// Every agent runs this: on the bad node (BLAME_TEST_CRASH in its agent's environment) a
// worker that fails a second after it starts, while the others' serve until released.
std::vector<std::string> program(const TempDir& dir) {
  return {"/bin/sh", "-c", "if [ -n \"$BLAME_TEST_CRASH\" ]; then sleep 1; exit 3; fi; exec \"$0\" serve \"$1\"",
          testWorker(), dir.path()};
}

// One agent named `name` of run "blame" at `endpoint`, with `conf` added to the rendezvous's.
std::unique_ptr<ChildProcess> startAgent(const TempDir& dir, const std::string& endpoint, const std::string& nnodes,
                                         const std::string& name, bool bad, const std::string& conf = "") {
  std::vector<std::string> argv;
  if (bad) argv = {"/usr/bin/env", "BLAME_TEST_CRASH=1"};
  const std::vector<std::string> pltrun =
      pltrunCommand({"--nnodes", nnodes, "--nproc-per-node", "2", "--rdzv-endpoint", endpoint, "--rdzv-id", "blame",
                     "--rdzv-conf", kConf + ",is_host=0,node_name=" + name + conf, "--max-restarts", "5",
                     "--max-node-blames", "2", "--log-dir", dir / "logs", "--term-timeout", "5"});
  argv.insert(argv.end(), pltrun.begin(), pltrun.end());
  const std::vector<std::string> workers = program(dir);
  argv.insert(argv.end(), workers.begin(), workers.end());
  return std::make_unique<ChildProcess>(argv, std::vector<std::string>{"TMPDIR=" + dir.path()});
}

json statusJson(const std::string& endpoint) {
  const Finished run = runPltrun({"status", "--rdzv-endpoint", endpoint, "--rdzv-id", "blame", "--json"});
  INFO(run.err);
  REQUIRE_FALSE(run.out.empty());
  return json::parse(run.out);
}

const std::string kExcludedLine =
    "node bad is excluded from run blame for the rest of the run: its workers ended 2 rounds in a row while the "
    "other nodes' ran (--max-node-blames 2); last, round ";

}  // namespace

TEST_CASE("node blame: a node whose workers crash twice while the others' run leaves, and the job finishes on the rest",
          "[node_blame][elastic]") {
  TempDir dir;
  WorkerSweeper sweeper(dir);
  StandaloneStore store(dir);
  auto goodA = startAgent(dir, store.endpoint(), "2:3", "good-a", false);
  auto goodB = startAgent(dir, store.endpoint(), "2:3", "good-b", false);
  auto bad = startAgent(dir, store.endpoint(), "2:3", "bad", true);

  const Finished left = bad->wait(90s);
  INFO("the bad agent's stderr: " << left.err);
  REQUIRE_FALSE(left.timedOut);
  CHECK(left.status == 1);
  CHECK_THAT(left.err, Catch::Contains(kExcludedLine));
  const std::vector<json> excludedEvents = eventsNamed(agentEvents(dir, "blame", bad->pid()), "node_excluded");
  REQUIRE(excludedEvents.size() == 1);
  CHECK(excludedEvents[0].at("node") == "bad");
  CHECK(excludedEvents[0].at("blames") == 2);
  const int round = excludedEvents[0].at("round").get<int>();

  // The others re-form without it: two nodes of two workers, in a later round.
  waitForRound(dir, 4, round + 1);
  const json running = statusJson(store.endpoint());
  CHECK(running.at("state") == "running");
  REQUIRE(running.at("excluded_nodes").size() == 1);
  CHECK(running.at("excluded_nodes")[0].at("node") == "bad");
  CHECK(running.at("excluded_nodes")[0].at("kind") == "blamed");
  CHECK_THAT(running.at("excluded_nodes")[0].at("reason").get<std::string>(),
             Catch::StartsWith("its workers ended 2 rounds in a row"));
  const Finished text = runPltrun({"status", "--rdzv-endpoint", store.endpoint(), "--rdzv-id", "blame"});
  CHECK_THAT(text.out, Catch::Contains("  excluded: bad (blamed, since "));

  release(dir);
  for (ChildProcess* good : {goodA.get(), goodB.get()}) {
    const Finished finished = good->wait(kAgentExit);
    INFO("a good agent's stderr: " << finished.err);
    CHECK_FALSE(finished.timedOut);
    CHECK(finished.status == 0);
  }
  const json ended = statusJson(store.endpoint());
  CHECK(ended.at("state") == "finished");
  CHECK(ended.at("job_exit_status") == 0);
  CHECK(ended.at("excluded_nodes").size() == 1);
}

TEST_CASE("node blame: without enough nodes left, the job fails with the excluded node in failure.json",
          "[node_blame][elastic]") {
  TempDir dir;
  WorkerSweeper sweeper(dir);
  StandaloneStore store(dir);
  auto good = startAgent(dir, store.endpoint(), "2", "good-a", false, ",join_timeout=5");
  auto bad = startAgent(dir, store.endpoint(), "2", "bad", true, ",join_timeout=5");
  const Finished left = bad->wait(90s);
  INFO("the bad agent's stderr: " << left.err);
  CHECK(left.status == 1);
  CHECK_THAT(left.err, Catch::Contains(kExcludedLine));

  const Finished failed = good->wait(kAgentExit);
  INFO("the good agent's stderr: " << failed.err);
  REQUIRE_FALSE(failed.timedOut);
  CHECK(failed.status == 1);
  CHECK_THAT(failed.err, Catch::Contains("rendezvous timed out: 1 of at least 2 nodes joined round ") &&
                             Catch::Contains("node bad was kept out of the job (blamed): its workers ended 2 rounds"));
  int reports = 0;
  for (const auto& entry : fs::recursive_directory_iterator(dir / "logs")) {
    if (entry.path().filename() != "failure.json") continue;
    const json failure = json::parse(readFile(entry.path().string()));
    if (!failure.contains("excluded_nodes")) continue;
    ++reports;
    CHECK(failure.at("root_cause").is_null());
    REQUIRE(failure.at("excluded_nodes").size() == 1);
    CHECK(failure.at("excluded_nodes")[0].at("node") == "bad");
    CHECK(failure.at("excluded_nodes")[0].at("kind") == "blamed");
  }
  CHECK(reports == 1);
}

TEST_CASE("node blame: an excluded node that hosts the store keeps it, running no workers, until the job ends",
          "[node_blame][elastic]") {
  TempDir dir;
  WorkerSweeper sweeper(dir);
  ElasticJob job(dir, "2:3", "blame", {"--max-restarts", "5", "--max-node-blames", "2"}, program(dir));
  // One --rdzv-conf for the job: every agent goes by the host name they share.
  ChildProcess& bad = job.start({"/usr/bin/env", "BLAME_TEST_CRASH=1"});
  job.start();
  job.start();
  REQUIRE(bad.waitForStderr("running no workers, until the job ends", 90s));
  CHECK_THAT(bad.stderrSoFar(), Catch::Contains("is excluded from run blame for the rest of the run: its workers ended "
                                                "2 rounds in a row while the other nodes' ran (--max-node-blames 2)"));
  const std::vector<json> excluded = eventsNamed(agentEvents(dir, "blame", bad.pid()), "node_excluded");
  REQUIRE(excluded.size() == 1);
  waitForRound(dir, 4, excluded[0].at("round").get<int>() + 1);
  release(dir);
  const std::vector<Finished> agents = job.waitAll();
  INFO("the bad agent: " << agents[0].err << "\nthe others: " << agents[1].err << agents[2].err);
  CHECK(agents[0].status == 1);
  CHECK_THAT(agents[0].err, Catch::Contains("the job has ended: every node's workers succeeded"));
  CHECK(agents[1].status == 0);
  CHECK(agents[2].status == 0);
}

// Values in the rendezvous store are untrusted input: a round end of the wrong type written
// into a running job's store by another client ends that round as a failed rendezvous that
// names the key; the agents meet again in a new round and the job goes on. Before, every
// agent aborted (nlohmann's type_error escaping, exit 134).

#include <catch2/catch.hpp>
#include <string>

#include "e2e/elastic_job.h"
#include "e2e/foreign_store_writes.h"
#include "helpers/child_process.h"
#include "helpers/temp_dir.h"
#include "pltrun/tcp_store.h"

using namespace pltrun::test;
using namespace std::chrono_literals;

TEST_CASE("an elastic job survives a round end of the wrong type written into its store", "[elastic][e2e][bounded]") {
  TempDir dir;
  // Round 0's workers run long enough for the bad value to land; later rounds end at once.
  ElasticJob job(dir, "2", "typed-values", {"--max-restarts", "0"},
                 {"--no-python", "/usr/bin/python3", "-c",
                  "import os, time\n"
                  "time.sleep(30 if os.environ['TORCHELASTIC_RESTART_COUNT'] == '0' else 0.2)\n"});
  ChildProcess& first = job.start();
  ChildProcess& second = job.start();
  REQUIRE(first.waitForStderr("starting 2 workers", 30s));
  REQUIRE(second.waitForStderr("starting 2 workers", 30s));

  pltrun::TcpStoreOptions options;
  options.host = "127.0.0.1";
  options.port = job.port();
  pltrun::TcpStore client(options);
  const std::string prefix = "pltrun/rdzv/typed-values/";
  const std::string round = client.get(prefix + "round", 5s);
  client.set(prefix + "r" + round + "/end", R"({"reason":"worker_failed","host":5})");

  const std::vector<Finished> ends = job.waitAll(60s);
  INFO("agent 0: " << ends[0].err << "\nagent 1: " << ends[1].err);
  CHECK(ends[0].status == 0);
  CHECK(ends[1].status == 0);
  for (const Finished& end : ends) {
    CHECK_THAT(end.err, Catch::Contains("malformed value at 'pltrun/rdzv/typed-values/r" + round + "/end'"));
    CHECK_THAT(end.err, !Catch::Contains("terminate called"));
  }
}

namespace {

// Two agents of one worker each meeting at `store` (which none of them hosts), `tail` after
// the job's flags: more flags, then the program.
std::vector<std::unique_ptr<ChildProcess>> twoAgentsAt(const StandaloneStore& store, const std::string& runId,
                                                       const std::vector<std::string>& tail) {
  std::vector<std::string> args = {
      "--nnodes", "2",           "--nproc-per-node",  "1", "--rdzv-endpoint", store.endpoint(), "--rdzv-id",
      runId,      "--rdzv-conf", kConf + ",is_host=0"};
  args.insert(args.end(), tail.begin(), tail.end());
  std::vector<std::unique_ptr<ChildProcess>> agents;
  for (int node = 0; node < 2; ++node) agents.push_back(std::make_unique<ChildProcess>(pltrunCommand(args)));
  return agents;
}

}  // namespace

TEST_CASE("30 rounds keep only the last rounds' keys: a store of 150 keys carries the job to the end",
          "[elastic][e2e][bounded]") {
  // Before: about 13 keys per round were never deleted (400 after 30 rounds), and a store
  // with --max-keys 300 ended the job in round 22 as "lost".
  TempDir dir;
  StandaloneStore store(dir, {"--max-keys", "150"});
  // Every worker fails at once, round after round: the node that reports first would be
  // blamed (--max-node-blames), so that is off here.
  auto agents = twoAgentsAt(store, "many-rounds",
                            {"--max-restarts", "30", "--max-node-blames", "0", "--no-python", "/bin/sh", "-c",
                             "[ \"$TORCHELASTIC_RESTART_COUNT\" -ge 30 ]"});
  for (auto& agent : agents) {
    Finished end = agent->wait(180s);
    INFO(end.err.substr(end.err.size() > 4000 ? end.err.size() - 4000 : 0));
    CHECK(end.status == 0);
  }
  pltrun::TcpStoreOptions options;
  options.host = "127.0.0.1";
  options.port = std::stoi(store.endpoint().substr(store.endpoint().rfind(':') + 1));
  pltrun::TcpStore client(options);
  const auto keys = client.numKeys();
  INFO("keys left: " << keys);
  CHECK(keys < 60);  // the job's own few, and the last rounds' (3 x about 13 for 2 nodes)
}

TEST_CASE("a store that refuses a write for want of keys is reported as full, not as lost", "[elastic][e2e][bounded]") {
  // Torch's protocol can only refuse a request by closing the connection; before, the agents
  // said the store's host had ended while it still ran. Two nodes' first round needs more
  // than 6 keys.
  TempDir dir;
  StandaloneStore store(dir, {"--max-keys", "6"});
  auto agents = twoAgentsAt(store, "full", {"--no-python", "/bin/true"});
  std::string both;
  for (auto& agent : agents) {
    Finished end = agent->wait(60s);
    CHECK(end.status != 0);
    both += end.err;
  }
  INFO(both);
  CHECK_THAT(both, Catch::Contains("closed this agent's connection") && Catch::Contains("but still answers") &&
                       Catch::Contains("full"));
  CHECK_THAT(both, !Catch::Contains("the agent that hosted it has ended"));
}

TEST_CASE("a job state that pltrun does not write stops the agent with one line naming the key",
          "[elastic][e2e][bounded]") {
  // Another program (or another job on the same --rdzv-id) left a formed round 0 that is not
  // pltrun's JSON: the agent of an elastic job (MIN:MAX nodes) says the state is not what
  // pltrun writes, names the key and the likely cause, and stops; it neither blames the
  // store nor aborts.
  TempDir dir;
  StandaloneStore store(dir);
  pltrun::TcpStoreOptions options;
  options.host = "127.0.0.1";
  options.port = std::stoi(store.endpoint().substr(store.endpoint().rfind(':') + 1));
  pltrun::TcpStore client(options);
  client.set("pltrun/rdzv/not-ours/r0/complete", "garbage");

  ChildProcess agent(pltrunCommand({"--nnodes", "1:2", "--nproc-per-node", "1", "--rdzv-endpoint", store.endpoint(),
                                    "--rdzv-id", "not-ours", "--rdzv-conf", kConf + ",is_host=0", "/bin/true"}));
  const Finished end = agent.wait(60s);
  INFO(end.err);
  CHECK(end.status != 0);
  CHECK_THAT(end.err, Catch::Contains("the rendezvous state of run not-ours"));
  CHECK_THAT(end.err, Catch::Contains("is not what pltrun writes"));
  CHECK_THAT(end.err, Catch::Contains("at 'pltrun/rdzv/not-ours/r0/complete'"));
  CHECK_THAT(end.err, Catch::Contains("another job using the same --rdzv-id?"));
  CHECK_THAT(end.err, !Catch::Contains("terminate called"));
}

TEST_CASE("an agent's log lines quote another user's round end within the line, escapes shown",
          "[elastic][e2e][bounded][other_user]") {
  // Another local user closes a run in an open store with a timed-out end whose message holds
  // a newline, a line of its own and a terminal escape. The agent that joins it says why the
  // job is over in one "pltrun: " line; before, the message began a line of its own.
  TempDir dir;
  StandaloneStore store(dir);
  const int port = std::stoi(store.endpoint().substr(store.endpoint().rfind(':') + 1));
  writeForeignKeys(port, "closed-by-other",
                   {{"round", "0"},
                    {"closed", R"({"reason":"timed_out","host":"","message":"x\n[forged] line\u001b[2J",)"
                               R"("status":1,"failures":0,"final":true})"}});
  ChildProcess agent(pltrunCommand({"--nnodes", "1:2", "--nproc-per-node", "1", "--rdzv-endpoint", store.endpoint(),
                                    "--rdzv-id", "closed-by-other", "--rdzv-conf", kConf + ",is_host=0", "/bin/true"}));
  const Finished end = agent.wait(60s);
  INFO(end.err);
  CHECK(end.status == 1);
  CHECK_THAT(end.err, Catch::Contains("pltrun: rendezvous timed out: x\\x0a[forged] line\\x1b[2J; start the missing"));
  CHECK_THAT("\n" + end.err, !Catch::Contains("\n[forged]"));
  CHECK(end.err.find('\x1b') == std::string::npos);
}

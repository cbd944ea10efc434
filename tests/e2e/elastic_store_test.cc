// Where the workers' and the agents' stores live in an elastic job: a standalone
// pltrun-store as the rendezvous endpoint (no agent hosts it), and --no-agent-store
// (torchrun's way: rank 0's node picks a free port for the workers' own store).

#include <signal.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <thread>

#include "e2e/elastic_job.h"
#include "helpers/child_process.h"
#include "helpers/temp_dir.h"
#include "helpers/worker_env_file.h"

using namespace pltrun::test;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

int printedPort(const ChildProcess& process, const std::string& pattern) {
  auto err = process.waitForStderr("listening on", 20s);
  if (!err) {
    auto out = process.stderrSoFar();
    FAIL("no 'listening on' line; stderr: " << out);
  }
  std::smatch match;
  REQUIRE(std::regex_search(*err, match, std::regex(pattern)));
  return std::stoi(match[1]);
}

std::vector<std::string> agent(const std::string& endpoint, const std::string& runId, const std::string& directory,
                               const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args = {"--nnodes",        "2",      "--nproc-per-node", "2",
                                   "--rdzv-endpoint", endpoint, "--rdzv-id",        runId};
  args.insert(args.end(), extra.begin(), extra.end());
  args.insert(args.end(), {testWorker(), "env", directory});
  return pltrunCommand(args);
}

}  // namespace

TEST_CASE("agents meet at a standalone pltrun-store that none of them hosts", "[elastic][e2e]") {
  TempDir directory;
  StandaloneStore store(directory);
  const std::string endpoint = store.endpoint();

  ChildProcess first(agent(endpoint, "standalone", directory.path(), {"--rdzv-conf", "is_host=0"}));
  ChildProcess second(agent(endpoint, "standalone", directory.path()));  // finds the port taken: a client too
  Finished firstEnd = first.wait(60s);
  Finished secondEnd = second.wait(60s);
  INFO(firstEnd.err << secondEnd.err);
  CHECK(firstEnd.status == 0);
  CHECK(secondEnd.status == 0);
  CHECK_THAT(firstEnd.err + secondEnd.err, !Catch::Contains("rendezvous store for run"));  // nobody hosted
  std::set<std::string> masterPorts;
  for (int rank = 0; rank < 4; ++rank) {
    json env = workerEnvironment(directory, rank);
    CHECK(env["WORLD_SIZE"] == "4");
    CHECK(env["MASTER_ADDR"] == "127.0.0.1");
    masterPorts.insert(env["MASTER_PORT"].get<std::string>());
  }
  // Node rank 0's agent hosts the workers' store, apart from the standalone store.
  CHECK(masterPorts.size() == 1);
  CHECK(masterPorts.count(endpoint.substr(endpoint.rfind(':') + 1)) == 0);
}

TEST_CASE("elastic with --no-agent-store: rank 0's node picks the workers' store port, as torchrun does",
          "[elastic][e2e]") {
  TempDir directory;
  ChildProcess first(agent("127.0.0.1:0", "own-store", directory.path(), {"--no-agent-store"}));
  const int storePort = printedPort(first, "listening on 127\\.0\\.0\\.1:(\\d+)");
  ChildProcess second(
      agent("127.0.0.1:" + std::to_string(storePort), "own-store", directory.path(), {"--no-agent-store"}));
  Finished firstEnd = first.wait(60s);
  Finished secondEnd = second.wait(60s);
  INFO(firstEnd.err << secondEnd.err);
  REQUIRE(firstEnd.status == 0);
  REQUIRE(secondEnd.status == 0);
  std::set<std::string> masterPorts;
  for (int rank = 0; rank < 4; ++rank) {
    json env = workerEnvironment(directory, rank);
    CHECK(env["TORCHELASTIC_USE_AGENT_STORE"] == "False");
    CHECK(env["MASTER_ADDR"] == "127.0.0.1");
    masterPorts.insert(env["MASTER_PORT"].get<std::string>());
  }
  REQUIRE(masterPorts.size() == 1);  // every worker meets at the same place
  CHECK(*masterPorts.begin() != std::to_string(storePort));
}

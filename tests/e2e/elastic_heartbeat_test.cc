// A host that vanishes without closing its sockets: a SIGSTOPped agent keeps its store
// connection open (the kernel still answers for it), so only the heartbeats can tell the
// others that it is gone.

#include <signal.h>

#include <catch2/catch.hpp>
#include <regex>

#include "helpers/child_process.h"
#include "helpers/temp_dir.h"

using namespace pltrun::test;
using namespace std::chrono_literals;

namespace {

std::vector<std::string> agentArgs(const std::string& endpoint, const std::string& directory) {
  return pltrunCommand({"--nnodes", "2:3", "--nproc-per-node", "1", "--rdzv-endpoint", endpoint, "--rdzv-id",
                        "heartbeat", "--rdzv-conf",
                        "last_call_timeout=0.5,keep_alive_interval=0.3,keep_alive_max_attempt=3", "--term-timeout", "5",
                        testWorker(), "signals", directory});
}

int storePort(const ChildProcess& host) {
  auto err = host.waitForStderr("listening on 127.0.0.1:", 20s);
  REQUIRE(err);
  std::smatch match;
  REQUIRE(std::regex_search(*err, match, std::regex("listening on 127\\.0\\.0\\.1:(\\d+)")));
  return std::stoi(match[1]);
}

}  // namespace

TEST_CASE("an agent that stops answering is found by heartbeats and the others re-form without it", "[elastic][e2e]") {
  TempDir directory;
  ChildProcess first(agentArgs("127.0.0.1:0", directory.path()));
  const std::string endpoint = "127.0.0.1:" + std::to_string(storePort(first));
  ChildProcess second(agentArgs(endpoint, directory.path()));
  ChildProcess third(agentArgs(endpoint, directory.path()));
  for (int rank = 0; rank < 3; ++rank) REQUIRE(waitForFile(directory / ("ready_" + std::to_string(rank)), 30s));

  const auto stopped = std::chrono::steady_clock::now();
  third.signal(SIGSTOP);
  // 3 silent intervals of 0.3 s, then the survivors re-form as a round of 2 nodes.
  REQUIRE(first.waitForStderr("of 2 nodes", 20s));
  REQUIRE(second.waitForStderr("of 2 nodes", 20s));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - stopped).count();
  INFO("re-formed " << seconds << " s after the agent stopped");
  CHECK(seconds < 15);
  CHECK_THAT(first.stderrSoFar() + second.stderrSoFar(), Catch::Contains("no heartbeat for 0.9 s"));

  third.signal(SIGKILL);  // its worker dies with it (parent-death signal)
  Finished thirdEnd = third.wait(10s);
  CHECK(thirdEnd.status == 128 + SIGKILL);
  first.signal(SIGTERM);
  Finished firstEnd = first.wait(30s);
  Finished secondEnd = second.wait(30s);
  CHECK(firstEnd.status == 128 + SIGTERM);
  CHECK(secondEnd.status == 128 + SIGTERM);
}

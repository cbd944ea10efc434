// A worker that outlives its attempt cannot disturb the next one: torch workers (1.13 and
// 2.6) whose rank 0 ignores SIGTERM after the last rank failed and keeps writing into the
// workers' store, reconnecting whenever it is cut off, until pltrun SIGKILLs it
// (tests/e2e/torch_straggler.py). The next attempt's workers read the same raw keys and must
// find nothing of attempt 0's: neither what every rank wrote before the failure nor what the
// straggler wrote after SIGTERM. On a launcher that keeps one workers' store for every
// attempt they find both.

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "e2e/torch_runtimes.h"
#include "helpers/child_process.h"
#include "helpers/temp_dir.h"

using namespace pltrun::test;
using namespace std::chrono_literals;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::string kScript = std::string(TESTS_SOURCE_DIR) + "/e2e/torch_straggler.py";

std::vector<pid_t> workerPids(const TempDir& dir) {
  std::vector<pid_t> pids;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(dir / "pids", error)) {
    pids.push_back(std::stoi(readFile(entry.path().string())));
  }
  return pids;
}

void checkStragglerIsHarmless(const TorchRuntime& torch, bool elastic) {
  torch.available();
  TempDir dir;
  const std::vector<std::string> env = torch.workerEnvironment(dir.path());
  // The straggler gets 2 s between SIGTERM and SIGKILL to write into the store.
  const std::vector<std::string> common = {"--max-restarts", "1", "--term-timeout", "2", kScript, dir.path()};
  std::vector<Finished> launchers;
  int worldSize = 0;
  if (!elastic) {
    std::vector<std::string> args = {"--nproc-per-node", "2"};
    args.insert(args.end(), common.begin(), common.end());
    ChildProcess pltrun(pltrunCommand(args), env);
    launchers.push_back(pltrun.wait(120s));
    worldSize = 2;
  } else {
    auto agentArgs = [&](int port) {
      std::vector<std::string> args = {
          "--nnodes",  "2",        "--nproc-per-node", "2", "--rdzv-endpoint", "127.0.0.1:" + std::to_string(port),
          "--rdzv-id", "straggler"};
      args.insert(args.end(), common.begin(), common.end());
      return args;
    };
    ChildProcess host(pltrunCommand(agentArgs(0)), env);
    const int port = rendezvousStorePort(host);
    INFO("the first agent's stderr: " << host.stderrSoFar());
    REQUIRE(port != 0);
    ChildProcess joiner(pltrunCommand(agentArgs(port)), env);
    launchers.push_back(host.wait(120s));
    launchers.push_back(joiner.wait(30s));
    worldSize = 4;
  }
  std::string output;
  for (const Finished& launcher : launchers) output += launcher.err;
  INFO("torch " << torch.version << (elastic ? ", 2 elastic agents" : ", single node") << "\n" << output);
  for (const Finished& launcher : launchers) {
    CHECK_FALSE(launcher.timedOut);
    CHECK(launcher.status == 0);
  }
  // The straggler really outlived SIGTERM and kept trying to write.
  const std::string report = readFile(dir / "straggler.json");
  INFO("straggler: " << report);
  REQUIRE_FALSE(report.empty());
  json straggler = json::parse(report);
  CHECK(straggler.at("sigterm") == true);
  CHECK(straggler.at("writes_after_sigterm").get<int>() + straggler.at("failures_after_sigterm").get<int>() > 0);
  // The next attempt saw none of attempt 0's keys.
  for (int rank = 0; rank < worldSize; ++rank) {
    const std::string text = readFile(dir / ("seen_" + std::to_string(rank) + ".json"));
    INFO("rank " << rank << " of attempt 1 saw: " << text);
    REQUIRE_FALSE(text.empty());
    json seen = json::parse(text);
    CHECK(seen.at("attempt0_ranks") == 0);
    CHECK(seen.at("straggler_writes") == 0);
  }
  std::vector<pid_t> survivors = waitUntilGone(workerPids(dir), 2s);
  INFO("worker pids still alive: " << json(survivors).dump());
  CHECK(survivors.empty());
}

}  // namespace

TEST_CASE("torch 1.13: a straggler of attempt 0 cannot reach the next attempt's keys", "[torch][restart]") {
  checkStragglerIsHarmless(torch113(), false);
}
TEST_CASE("torch 2.6: a straggler of attempt 0 cannot reach the next attempt's keys", "[torch][torch2][restart]") {
  checkStragglerIsHarmless(torch26(), false);
}
TEST_CASE("torch 1.13, 2 elastic agents: a straggler of round 0 cannot reach round 1's keys", "[torch][elastic]") {
  checkStragglerIsHarmless(torch113(), true);
}
TEST_CASE("torch 2.6, 2 elastic agents: a straggler of round 0 cannot reach round 1's keys",
          "[torch][torch2][elastic]") {
  checkStragglerIsHarmless(torch26(), true);
}
TEST_CASE("torch 2.14: a straggler of attempt 0 cannot reach the next attempt's keys", "[torch][torch2][restart]") {
  checkStragglerIsHarmless(torch214(), false);
}
TEST_CASE("torch 2.14, 2 elastic agents: a straggler of round 0 cannot reach round 1's keys",
          "[torch][torch2][elastic]") {
  checkStragglerIsHarmless(torch214(), true);
}

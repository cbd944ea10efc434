// buildWorkerEnv: torchrun's worker variables for every placement, and the rules for what
// the launcher's own environment may override.

#include "launcher/plan/worker_env.h"

#include <catch2/catch.hpp>
#include <set>
#include <string>
#include <vector>

#include "pltrun/error.h"

using pltrun::buildWorkerEnv;
using pltrun::Environment;
using pltrun::setsOmpNumThreads;
using pltrun::WorkerPlacement;

namespace {

WorkerPlacement placementFor(int nnodes, int localWorldSize, int nodeRank, int localRank) {
  WorkerPlacement placement;
  placement.nnodes = nnodes;
  placement.localWorldSize = localWorldSize;
  placement.nodeRank = nodeRank;
  placement.localRank = localRank;
  placement.role = "trainer";
  placement.masterAddr = "10.0.0.7";
  placement.masterPort = 29512;
  placement.restartCount = 2;
  placement.maxRestarts = 5;
  placement.runId = "run-xyz";
  placement.errorFile = "/tmp/err/" + std::to_string(localRank) + "/error.json";
  return placement;
}

// The value of `name`, or "<unset>".
std::string valueOf(const Environment& env, const std::string& name) {
  auto found = env.find(name);
  return found == env.end() ? "<unset>" : found->second;
}

}  // namespace

TEST_CASE("worker variables for every node and local rank", "[worker_env]") {
  const Environment inherited{{"PATH", "/usr/bin"}};
  for (int nnodes = 1; nnodes <= 3; ++nnodes) {
    for (int localWorldSize = 1; localWorldSize <= 8; ++localWorldSize) {
      for (int nodeRank = 0; nodeRank < nnodes; ++nodeRank) {
        for (int localRank = 0; localRank < localWorldSize; ++localRank) {
          const WorkerPlacement placement = placementFor(nnodes, localWorldSize, nodeRank, localRank);
          const Environment env = buildWorkerEnv(inherited, placement);
          const std::string rank = std::to_string(nodeRank * localWorldSize + localRank);
          const std::string worldSize = std::to_string(nnodes * localWorldSize);
          INFO("nnodes " << nnodes << ", local world size " << localWorldSize << ", node rank " << nodeRank
                         << ", local rank " << localRank);
          CHECK(valueOf(env, "RANK") == rank);
          CHECK(valueOf(env, "WORLD_SIZE") == worldSize);
          CHECK(valueOf(env, "LOCAL_RANK") == std::to_string(localRank));
          CHECK(valueOf(env, "LOCAL_WORLD_SIZE") == std::to_string(localWorldSize));
          CHECK(valueOf(env, "GROUP_RANK") == std::to_string(nodeRank));
          CHECK(valueOf(env, "NODE_RANK") == std::to_string(nodeRank));
          CHECK(valueOf(env, "GROUP_WORLD_SIZE") == std::to_string(nnodes));
          CHECK(valueOf(env, "ROLE_RANK") == rank);
          CHECK(valueOf(env, "ROLE_WORLD_SIZE") == worldSize);
          CHECK(valueOf(env, "ROLE_NAME") == "trainer");
          CHECK(valueOf(env, "MASTER_ADDR") == "10.0.0.7");
          CHECK(valueOf(env, "MASTER_PORT") == "29512");
          CHECK(valueOf(env, "TORCHELASTIC_RESTART_COUNT") == "2");
          CHECK(valueOf(env, "TORCHELASTIC_MAX_RESTARTS") == "5");
          CHECK(valueOf(env, "TORCHELASTIC_RUN_ID") == "run-xyz");
          CHECK(valueOf(env, "TORCHELASTIC_ERROR_FILE") == placement.errorFile);
          CHECK(valueOf(env, "PLTRUN_LAUNCHED") == "1");
          CHECK(valueOf(env, "TORCHELASTIC_USE_AGENT_STORE") == "False");
          CHECK(valueOf(env, "TORCH_NCCL_ASYNC_ERROR_HANDLING") == "1");
          CHECK(valueOf(env, "OMP_NUM_THREADS") == (localWorldSize > 1 ? "1" : "<unset>"));
          CHECK(valueOf(env, "CUDA_VISIBLE_DEVICES") == "<unset>");
          CHECK(valueOf(env, "PATH") == "/usr/bin");
        }
      }
    }
  }
}

TEST_CASE("ranks are unique and cover 0..WORLD_SIZE-1", "[worker_env]") {
  for (int nnodes = 1; nnodes <= 3; ++nnodes) {
    for (int localWorldSize = 1; localWorldSize <= 8; ++localWorldSize) {
      std::vector<int> seen(static_cast<size_t>(nnodes * localWorldSize), 0);
      for (int nodeRank = 0; nodeRank < nnodes; ++nodeRank) {
        for (int localRank = 0; localRank < localWorldSize; ++localRank) {
          Environment env = buildWorkerEnv({}, placementFor(nnodes, localWorldSize, nodeRank, localRank));
          int rank = std::stoi(env.at("RANK"));
          REQUIRE(rank >= 0);
          REQUIRE(rank < static_cast<int>(seen.size()));
          ++seen[static_cast<size_t>(rank)];
        }
      }
      for (int count : seen) CHECK(count == 1);
    }
  }
}

TEST_CASE("TORCHELASTIC_USE_AGENT_STORE is True or False", "[worker_env]") {
  WorkerPlacement placement = placementFor(1, 2, 0, 1);
  placement.useAgentStore = true;
  CHECK(valueOf(buildWorkerEnv({}, placement), "TORCHELASTIC_USE_AGENT_STORE") == "True");
  placement.useAgentStore = false;
  CHECK(valueOf(buildWorkerEnv({}, placement), "TORCHELASTIC_USE_AGENT_STORE") == "False");
}

TEST_CASE("the default role name is 'default'", "[worker_env]") {
  CHECK(valueOf(buildWorkerEnv({}, WorkerPlacement{}), "ROLE_NAME") == "default");
}

TEST_CASE("TORCH_NCCL_ASYNC_ERROR_HANDLING is set only when not inherited", "[worker_env]") {
  const WorkerPlacement placement = placementFor(1, 2, 0, 0);
  CHECK(valueOf(buildWorkerEnv({}, placement), "TORCH_NCCL_ASYNC_ERROR_HANDLING") == "1");
  CHECK(valueOf(buildWorkerEnv({{"TORCH_NCCL_ASYNC_ERROR_HANDLING", "0"}}, placement),
                "TORCH_NCCL_ASYNC_ERROR_HANDLING") == "0");
  CHECK(valueOf(buildWorkerEnv({{"TORCH_NCCL_ASYNC_ERROR_HANDLING", "3"}}, placement),
                "TORCH_NCCL_ASYNC_ERROR_HANDLING") == "3");
}

TEST_CASE("the old NCCL_ASYNC_ERROR_HANDLING is the user's choice for torch 2.x too", "[worker_env]") {
  const WorkerPlacement placement = placementFor(1, 2, 0, 0);
  SECTION("only the old name: torch >= 2.2's name follows it, the old one is passed on") {
    Environment env = buildWorkerEnv({{"NCCL_ASYNC_ERROR_HANDLING", "0"}}, placement);
    CHECK(valueOf(env, "TORCH_NCCL_ASYNC_ERROR_HANDLING") == "0");
    CHECK(valueOf(env, "NCCL_ASYNC_ERROR_HANDLING") == "0");
  }
  SECTION("both names: each keeps its own value") {
    Environment env =
        buildWorkerEnv({{"NCCL_ASYNC_ERROR_HANDLING", "0"}, {"TORCH_NCCL_ASYNC_ERROR_HANDLING", "2"}}, placement);
    CHECK(valueOf(env, "TORCH_NCCL_ASYNC_ERROR_HANDLING") == "2");
    CHECK(valueOf(env, "NCCL_ASYNC_ERROR_HANDLING") == "0");
  }
  SECTION("neither: only the new name is set (torch 2.x warns about the old one)") {
    Environment env = buildWorkerEnv({}, placement);
    CHECK(valueOf(env, "NCCL_ASYNC_ERROR_HANDLING") == "<unset>");
  }
}

TEST_CASE("OMP_NUM_THREADS=1 only for several workers and only when unset", "[worker_env]") {
  SECTION("several workers, unset: set to 1") {
    CHECK(setsOmpNumThreads({}, 2));
    CHECK(valueOf(buildWorkerEnv({}, placementFor(1, 2, 0, 0)), "OMP_NUM_THREADS") == "1");
  }
  SECTION("one worker: left unset") {
    CHECK_FALSE(setsOmpNumThreads({}, 1));
    CHECK(valueOf(buildWorkerEnv({}, placementFor(1, 1, 0, 0)), "OMP_NUM_THREADS") == "<unset>");
    SECTION("even on several nodes") {
      CHECK(valueOf(buildWorkerEnv({}, placementFor(3, 1, 2, 0)), "OMP_NUM_THREADS") == "<unset>");
    }
  }
  SECTION("inherited value kept") {
    const Environment inherited{{"OMP_NUM_THREADS", "8"}};
    CHECK_FALSE(setsOmpNumThreads(inherited, 4));
    CHECK(valueOf(buildWorkerEnv(inherited, placementFor(1, 4, 0, 3)), "OMP_NUM_THREADS") == "8");
    CHECK(valueOf(buildWorkerEnv(inherited, placementFor(1, 1, 0, 0)), "OMP_NUM_THREADS") == "8");
  }
  SECTION("setsOmpNumThreads agrees with buildWorkerEnv") {
    for (int localWorldSize = 1; localWorldSize <= 8; ++localWorldSize) {
      for (const Environment& inherited : {Environment{}, Environment{{"OMP_NUM_THREADS", "2"}}}) {
        const Environment env = buildWorkerEnv(inherited, placementFor(1, localWorldSize, 0, 0));
        const bool changed = valueOf(env, "OMP_NUM_THREADS") != valueOf(inherited, "OMP_NUM_THREADS");
        CHECK(setsOmpNumThreads(inherited, localWorldSize) == changed);
      }
    }
  }
}

TEST_CASE("CUDA_VISIBLE_DEVICES is set only when the placement chose GPUs", "[worker_env]") {
  WorkerPlacement placement = placementFor(1, 2, 0, 1);
  SECTION("not chosen: absent stays absent, inherited is kept") {
    CHECK(valueOf(buildWorkerEnv({}, placement), "CUDA_VISIBLE_DEVICES") == "<unset>");
    CHECK(valueOf(buildWorkerEnv({{"CUDA_VISIBLE_DEVICES", "4,5"}}, placement), "CUDA_VISIBLE_DEVICES") == "4,5");
  }
  SECTION("chosen: set, overriding the inherited value") {
    placement.cudaVisibleDevices = "5,7";
    CHECK(valueOf(buildWorkerEnv({}, placement), "CUDA_VISIBLE_DEVICES") == "5,7");
    CHECK(valueOf(buildWorkerEnv({{"CUDA_VISIBLE_DEVICES", "4,5,6,7"}}, placement), "CUDA_VISIBLE_DEVICES") == "5,7");
  }
  SECTION("chosen empty (--devices 0): set to the empty string, hiding every GPU") {
    placement.cudaVisibleDevices = "";
    CHECK(valueOf(buildWorkerEnv({{"CUDA_VISIBLE_DEVICES", "0,1"}}, placement), "CUDA_VISIBLE_DEVICES").empty());
  }
}

TEST_CASE("inherited variables pass through, stale worker variables are overwritten", "[worker_env]") {
  const Environment inherited{{"HOME", "/root"},
                              {"MY_SETTING", "a=b c"},
                              {"RANK", "99"},
                              {"WORLD_SIZE", "99"},
                              {"LOCAL_RANK", "99"},
                              {"LOCAL_WORLD_SIZE", "99"},
                              {"GROUP_RANK", "99"},
                              {"NODE_RANK", "99"},
                              {"MASTER_ADDR", "old-host"},
                              {"MASTER_PORT", "1"},
                              {"TORCHELASTIC_RUN_ID", "old"},
                              {"ROLE_NAME", "old"},
                              {"TORCHELASTIC_RESTART_COUNT", "9"},
                              {"TORCHELASTIC_ERROR_FILE", "/old"}};
  const WorkerPlacement placement = placementFor(2, 4, 1, 2);
  const Environment env = buildWorkerEnv(inherited, placement);
  CHECK(valueOf(env, "HOME") == "/root");
  CHECK(valueOf(env, "MY_SETTING") == "a=b c");
  CHECK(valueOf(env, "RANK") == "6");
  CHECK(valueOf(env, "WORLD_SIZE") == "8");
  CHECK(valueOf(env, "LOCAL_RANK") == "2");
  CHECK(valueOf(env, "LOCAL_WORLD_SIZE") == "4");
  CHECK(valueOf(env, "GROUP_RANK") == "1");
  CHECK(valueOf(env, "NODE_RANK") == "1");
  CHECK(valueOf(env, "MASTER_ADDR") == "10.0.0.7");
  CHECK(valueOf(env, "MASTER_PORT") == "29512");
  CHECK(valueOf(env, "TORCHELASTIC_RUN_ID") == "run-xyz");
  CHECK(valueOf(env, "ROLE_NAME") == "trainer");
  CHECK(valueOf(env, "TORCHELASTIC_RESTART_COUNT") == "2");
  CHECK(valueOf(env, "TORCHELASTIC_ERROR_FILE") == placement.errorFile);
  SECTION("the inherited environment itself is not changed") { CHECK(inherited.at("RANK") == "99"); }
  SECTION("nothing but the worker variables is added") {
    const std::set<std::string> workerVariables{"LOCAL_RANK",
                                                "RANK",
                                                "GROUP_RANK",
                                                "NODE_RANK",
                                                "ROLE_RANK",
                                                "ROLE_NAME",
                                                "LOCAL_WORLD_SIZE",
                                                "WORLD_SIZE",
                                                "ROLE_WORLD_SIZE",
                                                "GROUP_WORLD_SIZE",
                                                "MASTER_ADDR",
                                                "MASTER_PORT",
                                                "TORCHELASTIC_RESTART_COUNT",
                                                "TORCHELASTIC_MAX_RESTARTS",
                                                "TORCHELASTIC_RUN_ID",
                                                "TORCHELASTIC_USE_AGENT_STORE",
                                                "TORCHELASTIC_ERROR_FILE",
                                                "PLTRUN_LAUNCHED",
                                                "TORCH_NCCL_ASYNC_ERROR_HANDLING",
                                                "OMP_NUM_THREADS"};
    for (const auto& [name, value] : env) {
      INFO(name << "=" << value);
      CHECK((inherited.count(name) == 1 || workerVariables.count(name) == 1));
    }
  }
}

namespace {

// A placement under supervision: a heartbeat socket, torch's FileTimer and the stack hook.
WorkerPlacement supervisedPlacement() {
  WorkerPlacement placement = placementFor(1, 2, 0, 1);
  placement.heartbeatPath = "/tmp/pltrun-run-1/heartbeat/1.sock";
  placement.timerFile = "/tmp/pltrun-run-1/timer";
  placement.stackFile = "/tmp/pltrun-run-1/stacks/1.txt";
  placement.stackSignal = 40;
  placement.pythonHookDirectory = "/usr/lib/pltrun/python";
  return placement;
}

}  // namespace

TEST_CASE("worker env: supervision sets the heartbeat socket, the stack hook and torch's timer file", "[worker_env]") {
  const Environment env = buildWorkerEnv({{"PATH", "/usr/bin"}}, supervisedPlacement());
  CHECK(valueOf(env, "PLTRUN_HEARTBEAT") == "/tmp/pltrun-run-1/heartbeat/1.sock");
  CHECK(valueOf(env, "PLTRUN_STACK_FILE") == "/tmp/pltrun-run-1/stacks/1.txt");
  CHECK(valueOf(env, "PLTRUN_STACK_SIGNAL") == "40");
  CHECK(valueOf(env, "TORCHELASTIC_TIMER_FILE") == "/tmp/pltrun-run-1/timer");
  CHECK(valueOf(env, "PYTHONPATH") == "/usr/lib/pltrun/python");  // no user entries: no trailing ':'
}

TEST_CASE("worker env: the hook goes first on PYTHONPATH and the user's entries stay after it", "[worker_env]") {
  const WorkerPlacement placement = supervisedPlacement();
  CHECK(valueOf(buildWorkerEnv({{"PYTHONPATH", "/home/ada/lib:/opt/site"}}, placement), "PYTHONPATH") ==
        "/usr/lib/pltrun/python:/home/ada/lib:/opt/site");
  CHECK(valueOf(buildWorkerEnv({{"PYTHONPATH", ""}}, placement), "PYTHONPATH") == "/usr/lib/pltrun/python");
}

TEST_CASE("worker env: without a hook, no PLTRUN_STACK_* and PYTHONPATH is the user's", "[worker_env]") {
  WorkerPlacement placement = supervisedPlacement();
  placement.pythonHookDirectory.clear();
  Environment env = buildWorkerEnv({{"PYTHONPATH", "/home/ada/lib"}}, placement);
  CHECK(valueOf(env, "PLTRUN_HEARTBEAT") == placement.heartbeatPath);  // heartbeats need no hook
  CHECK(valueOf(env, "TORCHELASTIC_TIMER_FILE") == placement.timerFile);
  CHECK(valueOf(env, "PLTRUN_STACK_FILE") == "<unset>");
  CHECK(valueOf(env, "PLTRUN_STACK_SIGNAL") == "<unset>");
  CHECK(valueOf(env, "PYTHONPATH") == "/home/ada/lib");

  placement = supervisedPlacement();
  placement.stackSignal = 0;  // no real-time signal to spare: no hook either
  env = buildWorkerEnv({}, placement);
  CHECK(valueOf(env, "PLTRUN_STACK_FILE") == "<unset>");
  CHECK(valueOf(env, "PYTHONPATH") == "<unset>");
}

TEST_CASE("worker env: no supervision, no supervision variables", "[worker_env]") {
  const Environment env = buildWorkerEnv({{"PYTHONPATH", "/home/ada/lib"}}, placementFor(1, 2, 0, 0));
  for (const char* name : {"PLTRUN_HEARTBEAT", "PLTRUN_STACK_FILE", "PLTRUN_STACK_SIGNAL", "TORCHELASTIC_TIMER_FILE"}) {
    INFO(name);
    CHECK(valueOf(env, name) == "<unset>");
  }
  CHECK(valueOf(env, "PYTHONPATH") == "/home/ada/lib");
}

TEST_CASE("flag --virtual-local-rank: LOCAL_RANK 0 and only the worker's own GPU, as torchrun 2.14",
          "[worker_env][torchrun214]") {
  WorkerPlacement placement = placementFor(1, 2, 0, 1);
  placement.virtualLocalRank = true;
  SECTION("through the inherited CUDA_VISIBLE_DEVICES") {
    Environment env = buildWorkerEnv({{"CUDA_VISIBLE_DEVICES", "4, 6"}}, placement);
    CHECK(valueOf(env, "LOCAL_RANK") == "0");
    CHECK(valueOf(env, "CUDA_VISIBLE_DEVICES") == "6");
    CHECK(valueOf(env, "RANK") == "1");  // the global rank is unchanged
  }
  SECTION("through the GPUs --devices chose") {
    placement.cudaVisibleDevices = "GPU-aaaa,GPU-bbbb";
    CHECK(valueOf(buildWorkerEnv({{"CUDA_VISIBLE_DEVICES", "0,1,2"}}, placement), "CUDA_VISIBLE_DEVICES") ==
          "GPU-bbbb");
  }
  SECTION("no list: the local rank as the GPU index") {
    CHECK(valueOf(buildWorkerEnv({}, placement), "CUDA_VISIBLE_DEVICES") == "1");
  }
  SECTION("a list too short for this worker is one line") {
    try {
      buildWorkerEnv({{"CUDA_VISIBLE_DEVICES", "4"}}, placement);
      FAIL("a worker without a GPU of its own was given an environment");
    } catch (const pltrun::Error& error) {
      CHECK(error.code() == pltrun::ErrorCode::InvalidArgument);
      CHECK(std::string(error.what()).find("--virtual-local-rank") != std::string::npos);
    }
  }
  SECTION("without it, LOCAL_RANK is the local rank and CUDA_VISIBLE_DEVICES is left alone") {
    placement.virtualLocalRank = false;
    Environment env = buildWorkerEnv({{"CUDA_VISIBLE_DEVICES", "4,6"}}, placement);
    CHECK(valueOf(env, "LOCAL_RANK") == "1");
    CHECK(valueOf(env, "CUDA_VISIBLE_DEVICES") == "4,6");
  }
}

TEST_CASE("worker env: the shared environment holds exactly what every worker of every attempt agrees on",
          "[worker_env]") {
  const Environment inherited = {{"PATH", "/usr/bin"}, {"RANK", "99"}, {"PYTHONPATH", "/home/ada/lib"}};
  WorkerPlacement first = placementFor(2, 4, 1, 0);
  first.heartbeatPath = "/tmp/run/hb.0.0";
  first.stackFile = "/tmp/run/stack.0.0";
  first.stackSignal = 40;
  first.pythonHookDirectory = "/tmp/run/python";
  first.errorFile = "/tmp/run/error.0.0";
  WorkerPlacement other = first;  // another worker of another elastic round, on another port
  other.localRank = 3;
  other.nodeRank = 0;
  other.nnodes = 3;
  other.masterAddr = "10.0.0.9";
  other.useAgentStore = !first.useAgentStore;
  other.restartCount = 4;
  other.masterPort = 31000;
  other.heartbeatPath = "/tmp/run/hb.4.3";
  other.stackFile = "/tmp/run/stack.4.3";
  other.errorFile = "/tmp/run/error.4.3";

  const Environment shared = pltrun::sharedWorkerEnv(inherited, first);
  const Environment firstEnv = buildWorkerEnv(inherited, first);
  const Environment otherEnv = buildWorkerEnv(inherited, other);
  for (const auto& [name, value] : shared) {
    INFO(name);
    CHECK(firstEnv.at(name) == value);
    CHECK(otherEnv.at(name) == value);
  }
  for (const auto& [name, value] : firstEnv) {
    INFO(name);
    if (otherEnv.at(name) == value) CHECK(shared.count(name) == 1);
  }
  CHECK(shared.count("RANK") == 0);  // not even the inherited 99: each worker gets its own
  CHECK(shared.at("PYTHONPATH") == "/tmp/run/python:/home/ada/lib");
  CHECK(shared.at("PLTRUN_STACK_SIGNAL") == "40");
}

TEST_CASE("worker env: with --virtual-local-rank the shared environment names no GPU", "[worker_env]") {
  WorkerPlacement placement = placementFor(1, 2, 0, 0);
  placement.virtualLocalRank = true;
  placement.cudaVisibleDevices = "4,5";
  CHECK(pltrun::sharedWorkerEnv({}, placement).count("CUDA_VISIBLE_DEVICES") == 0);
}

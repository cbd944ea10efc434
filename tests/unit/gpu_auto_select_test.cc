// --auto-select-gpus on one node with the fake inventory: PLTRUN_FAKE_GPU_BUSY and
// PLTRUN_FAKE_GPU_MODE as readGpuOccupancy reads them, the per-GPU locks of gpu_lock.h in a
// directory of the test's, and autoSelectGpus putting both together.

#include "launcher/placement/gpu_auto_select.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "helpers/scoped_env.h"
#include "helpers/temp_dir.h"
#include "launcher/placement/gpu_occupancy.h"
#include "pltrun/error.h"

using Catch::Matchers::Contains;
using pltrun::autoSelectGpus;
using pltrun::GpuComputeMode;
using pltrun::GpuLocks;
using pltrun::readGpuOccupancy;
using pltrun::test::ScopedEnv;
using pltrun::test::TempDir;

namespace {

using Ids = std::vector<std::string>;
using Indices = std::vector<int>;

}  // namespace

TEST_CASE("the fake inventory marks GPUs busy and sets compute modes", "[auto_select_gpus]") {
  ScopedEnv gpus("PLTRUN_FAKE_GPUS", "4");
  ScopedEnv busy("PLTRUN_FAKE_GPU_BUSY", "0:1234:python, 2:5678:a,2:5679:b,");
  ScopedEnv mode("PLTRUN_FAKE_GPU_MODE", "exclusive,3:prohibited");
  const auto states = readGpuOccupancy(Ids{"0", "1", "2", "3"});
  REQUIRE(states.size() == 4);
  REQUIRE(states[0].processes.size() == 1);
  CHECK(states[0].processes[0].pid == 1234);
  CHECK(states[0].processes[0].name == "python");
  CHECK(states[1].processes.empty());
  REQUIRE(states[2].processes.size() == 2);
  CHECK(states[2].processes[1].name == "b");
  CHECK(states[0].mode == GpuComputeMode::ExclusiveProcess);
  CHECK(states[3].mode == GpuComputeMode::Prohibited);
  CHECK(states[2].lockKey == "2");
  SECTION("an entry without a name takes the process' own, from /proc/PID/comm") {
    ScopedEnv self("PLTRUN_FAKE_GPU_BUSY", "1:" + std::to_string(getpid()));
    const auto named = readGpuOccupancy(Ids{"1"});
    REQUIRE(named[0].processes.size() == 1);
    CHECK(!named[0].processes[0].name.empty());
    CHECK(named[0].processes[0].name == std::string(program_invocation_short_name).substr(0, 15));
  }
  SECTION("indices are the physical GPUs', whatever CUDA_VISIBLE_DEVICES exposes") {
    const auto visible = readGpuOccupancy(Ids{"2", "1"});
    CHECK(visible[0].processes.size() == 2);
    CHECK(visible[1].processes.empty());
  }
  SECTION("malformed variables are refused naming them") {
    ScopedEnv bad("PLTRUN_FAKE_GPU_BUSY", "0-1234");
    CHECK_THROWS_WITH(readGpuOccupancy(Ids{"0"}), Contains("PLTRUN_FAKE_GPU_BUSY: '0-1234' is not valid"));
    ScopedEnv badPid("PLTRUN_FAKE_GPU_BUSY", "0:me");
    CHECK_THROWS_WITH(readGpuOccupancy(Ids{"0"}), Contains("PLTRUN_FAKE_GPU_BUSY"));
    ScopedEnv badMode("PLTRUN_FAKE_GPU_BUSY", "");
    ScopedEnv modeWord("PLTRUN_FAKE_GPU_MODE", "1:shared");
    CHECK_THROWS_WITH(readGpuOccupancy(Ids{"0"}), Contains("PLTRUN_FAKE_GPU_MODE: 'shared' is not valid"));
  }
}

TEST_CASE("a GPU lock is held until released and names its holder's pid", "[auto_select_gpus]") {
  TempDir dir("pltrun-gpu-locks");
  GpuLocks first(dir.path());
  CHECK(first.tryLock("0").taken);
  CHECK(first.tryLock("1").taken);
  first.release("1");
  first.finishChoosing();  // lets the next one choose
  {
    GpuLocks second(dir.path());
    const GpuLocks::Attempt zero = second.tryLock("0");
    CHECK_FALSE(zero.taken);
    CHECK(zero.heldBy == getpid());
    CHECK(second.tryLock("1").taken);
    second.finishChoosing();
  }
  std::ifstream file(dir.path() + "/pltrun-gpu-0." + std::to_string(geteuid()) + ".lock");
  std::string pid;
  file >> pid;
  CHECK(pid == std::to_string(getpid()));
}

TEST_CASE("autoSelectGpus chooses free unlocked GPUs and keeps them from the next choice", "[auto_select_gpus]") {
  TempDir dir("pltrun-gpu-locks");
  ScopedEnv lockDir("PLTRUN_GPU_LOCK_DIR", dir.path());
  ScopedEnv gpus("PLTRUN_FAKE_GPUS", "4");
  ScopedEnv busy("PLTRUN_FAKE_GPU_BUSY", "1:99:python");
  ScopedEnv mode("PLTRUN_FAKE_GPU_MODE", std::nullopt);
  const Ids visible{"0", "1", "2", "3"};
  auto first = autoSelectGpus(2, visible);
  CHECK(first.chosen == Indices{0, 2});
  auto second = autoSelectGpus(-1, visible);
  CHECK(second.chosen == Indices{3});
  try {
    autoSelectGpus(1, visible);
    FAIL("a third choice found a free GPU");
  } catch (const pltrun::Error& error) {
    CHECK(error.code() == pltrun::ErrorCode::InvalidArgument);
    const std::string pid = std::to_string(getpid());
    CHECK_THAT(error.what(), Contains("asked for 1 free GPU, but 0 of the 4 visible GPUs are free; GPU 0 is taken by "
                                      "pltrun pid " +
                                      pid + "; GPU 1 held by pid 99 (python); GPU 2 is taken by pltrun pid " + pid));
  }
  SECTION("a refused choice keeps no lock, and a job's end frees its GPUs") {
    { auto gone = std::move(first); }
    CHECK(autoSelectGpus(2, visible).chosen == Indices{0, 2});
  }
}

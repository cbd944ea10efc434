// --auto-select-gpus with the real pltrun over the fake inventory (PLTRUN_FAKE_GPUS plus
// PLTRUN_FAKE_GPU_BUSY / PLTRUN_FAKE_GPU_MODE) and real GPU locks in a directory of the
// test's (PLTRUN_GPU_LOCK_DIR): the free GPUs reach the workers, too few free is one line
// and exit 2 with no worker started, and two pltruns started together get disjoint GPUs.

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "e2e/elastic_job.h"
#include "helpers/child_process.h"
#include "helpers/worker_env_file.h"
#include "unit/scoped_env.h"

using namespace pltrun::test;
using Catch::Matchers::Contains;

namespace {

using Args = std::vector<std::string>;

// A worker that writes its CUDA_VISIBLE_DEVICES to DIR/gpus_RANK, then runs until
// DIR/release exists: the test decides when its pltrun ends, so two jobs overlap for sure.
Args gpusThenWait(const std::string& dir) {
  return {"--no-python", "/bin/sh", "-c",
          // Written aside and renamed, so that a file the test sees is complete.
          "printf %s \"$CUDA_VISIBLE_DEVICES\" > \"$0/.gpus_$RANK\" && mv \"$0/.gpus_$RANK\" \"$0/gpus_$RANK\"; "
          "while [ ! -e \"$0/release\" ]; do sleep 0.05; done",
          dir};
}

Args withFlags(Args flags, const Args& program) {
  flags.insert(flags.end(), program.begin(), program.end());
  return flags;
}

// pltrun FLAGS --auto-select-gpus with the `env` worker writing into `dir`, over the fake
// inventory `fake` (PLTRUN_FAKE_* and CUDA_VISIBLE_DEVICES; unset where not given), its
// GPU locks in `locks`.
Finished runAutoSelect(Args flags, const Args& fake, const TempDir& locks, const TempDir& dir) {
  flags.insert(flags.end(), {"--auto-select-gpus", testWorker(), "env", dir.path()});
  Args env{"PLTRUN_FAKE_GPU_BUSY", "PLTRUN_FAKE_GPU_MODE", "CUDA_VISIBLE_DEVICES",
           "PLTRUN_GPU_LOCK_DIR=" + locks.path()};
  env.insert(env.end(), fake.begin(), fake.end());
  return runPltrun(flags, env);
}

size_t lineCount(const std::string& text) {
  size_t lines = 0;
  for (char c : text) lines += c == '\n' ? 1 : 0;
  return lines;
}

}  // namespace

TEST_CASE("flag --auto-select-gpus runs the workers on the free GPUs only", "[devices][auto_select_gpus]") {
  TempDir locks, dir;
  SECTION("--devices 2 passes over the busy GPUs 0 and 2") {
    Finished run = runAutoSelect({"--devices", "2"},
                                 {"PLTRUN_FAKE_GPUS=4", "PLTRUN_FAKE_GPU_BUSY=0:1234:python,2:5678"}, locks, dir);
    INFO(run.err);
    REQUIRE(run.status == 0);
    CHECK(workerEnvironment(dir, 0)["CUDA_VISIBLE_DEVICES"] == "1,3");
    CHECK(workerEnvironment(dir, 1)["WORLD_SIZE"] == "2");
    CHECK(!std::filesystem::exists(dir / "env_2.json"));
    CHECK_THAT(run.err, Contains("GPU(s) 1, 3 chosen") && Contains("GPU 0 held by pid 1234 (python)"));
  }
  SECTION("-1 takes every free GPU among those CUDA_VISIBLE_DEVICES exposes") {
    Finished run = runAutoSelect({"--devices", "-1"},
                                 {"PLTRUN_FAKE_GPUS=8", "PLTRUN_FAKE_GPU_BUSY=5:1234,1:99",
                                  "CUDA_VISIBLE_DEVICES=4,5,6,7", "PLTRUN_FAKE_GPU_MODE=6:prohibited"},
                                 locks, dir);
    INFO(run.err);
    REQUIRE(run.status == 0);
    CHECK(workerEnvironment(dir, 0)["CUDA_VISIBLE_DEVICES"] == "4,7");
    CHECK(workerEnvironment(dir, 1)["LOCAL_WORLD_SIZE"] == "2");
  }
  SECTION("without --devices, --nproc-per-node N asks for N free GPUs") {
    Finished run = runAutoSelect(
        {"--nproc-per-node", "1"},
        {"PLTRUN_FAKE_GPUS=2", "PLTRUN_FAKE_GPU_BUSY=0:1234", "PLTRUN_FAKE_GPU_MODE=exclusive"}, locks, dir);
    INFO(run.err);
    REQUIRE(run.status == 0);
    CHECK(workerEnvironment(dir, 0)["CUDA_VISIBLE_DEVICES"] == "1");
  }
}

TEST_CASE("too few free GPUs: one line naming the holders, exit 2, no worker started", "[devices][auto_select_gpus]") {
  TempDir locks, dir;
  const std::string self = std::to_string(getpid());
  Finished run = runAutoSelect(
      {"--devices", "2"},
      {"PLTRUN_FAKE_GPUS=3", "PLTRUN_FAKE_GPU_BUSY=0:1234:python,2:" + self, "PLTRUN_FAKE_GPU_MODE=exclusive"}, locks,
      dir);
  INFO(run.err);
  CHECK(run.status == 2);
  CHECK(lineCount(run.err) == 1);
  CHECK_THAT(run.err, Contains("asked for 2 free GPUs, but 1 of the 3 visible GPUs is free (GPU 1)"));
  CHECK_THAT(run.err, Contains("GPU 0 (exclusive mode) held by pid 1234 (python)"));
  CHECK_THAT(run.err, Contains("GPU 2 (exclusive mode) held by pid " + self + " (e2e_tests)"));
  CHECK(std::filesystem::is_empty(dir.path()));
  SECTION("an explicit list has nothing to choose: refused the same way") {
    Finished listed = runAutoSelect({"--devices", "1,3"}, {"PLTRUN_FAKE_GPUS=4"}, locks, dir);
    CHECK(listed.status == 2);
    CHECK(lineCount(listed.err) == 1);
    CHECK_THAT(listed.err, Contains("--devices '1,3' names its GPUs: nothing to choose"));
    CHECK(std::filesystem::is_empty(dir.path()));
  }
}

TEST_CASE("two pltruns started together get disjoint GPUs, and a third finds them taken",
          "[devices][auto_select_gpus]") {
  TempDir locks, first, second, third;
  const Args env{"PLTRUN_FAKE_GPUS=4", "PLTRUN_FAKE_GPU_BUSY", "PLTRUN_FAKE_GPU_MODE", "CUDA_VISIBLE_DEVICES",
                 "PLTRUN_GPU_LOCK_DIR=" + locks.path()};
  const Args flags{"--devices", "2", "--auto-select-gpus"};
  ChildProcess a(pltrunCommand(withFlags(flags, gpusThenWait(first.path()))), env);
  ChildProcess b(pltrunCommand(withFlags(flags, gpusThenWait(second.path()))), env);
  const auto timeout = std::chrono::seconds(30);
  for (const TempDir* dir : {&first, &second}) {
    for (const char* rank : {"gpus_0", "gpus_1"}) REQUIRE(waitForFile(*dir / rank, timeout));
  }
  std::set<std::string> gpus;
  for (const TempDir* dir : {&first, &second}) {
    for (const char* rank : {"gpus_0", "gpus_1"}) {
      const std::string seen = readFile(*dir / rank);
      INFO(rank << ": '" << seen << "'");
      CHECK((seen == "0,1" || seen == "2,3" || seen == "0,2" || seen == "1,3"));
      if (std::string(rank) == "gpus_0") gpus.insert({seen.substr(0, 1), seen.substr(2, 1)});
    }
  }
  CHECK(gpus == std::set<std::string>{"0", "1", "2", "3"});  // four distinct GPUs: disjoint
  Finished refused = runPltrun({"--devices", "1", "--auto-select-gpus", testWorker(), "env", third.path()}, env);
  CHECK(refused.status == 2);
  CHECK_THAT(refused.err, Contains("is taken by pltrun pid " + std::to_string(a.pid())) &&
                              Contains("is taken by pltrun pid " + std::to_string(b.pid())));
  CHECK(std::filesystem::is_empty(third.path()));
  for (const TempDir* dir : {&first, &second}) std::ofstream(*dir / "release").put('\n');
  CHECK(a.wait(timeout).status == 0);
  CHECK(b.wait(timeout).status == 0);
}

TEST_CASE("each agent of an elastic job chooses free GPUs on its own node", "[devices][auto_select_gpus][elastic]") {
  TempDir dir, locks;
  // The agents inherit the test's environment: five fake GPUs, GPU 1 busy, the test's locks.
  pltrun_test::ScopedEnv gpus("PLTRUN_FAKE_GPUS", "5"), busy("PLTRUN_FAKE_GPU_BUSY", "1:1234:python"),
      mode("PLTRUN_FAKE_GPU_MODE", std::nullopt), visible("CUDA_VISIBLE_DEVICES", std::nullopt),
      lockDir("PLTRUN_GPU_LOCK_DIR", locks.path());
  ElasticJob job(dir, "2", "autoselect", {"--auto-select-gpus"}, {testWorker(), "env", dir.path()});
  job.start();  // two workers each (ElasticJob's --nproc-per-node 2): two free GPUs per agent
  job.start();
  for (const Finished& result : job.waitAll()) {
    INFO(result.err);
    CHECK(result.status == 0);
  }
  // Both agents run on this machine, so their locks keep them apart, as separate nodes are.
  std::set<std::string> perNode, everyGpu;
  for (int rank = 0; rank < 4; ++rank) {
    const std::string seen = workerEnvironment(dir, rank)["CUDA_VISIBLE_DEVICES"];
    INFO("rank " << rank << ": " << seen);
    REQUIRE(seen.size() == 3);
    perNode.insert(seen);
    everyGpu.insert({seen.substr(0, 1), seen.substr(2, 1)});
  }
  CHECK(perNode.size() == 2);
  CHECK(everyGpu == std::set<std::string>{"0", "2", "3", "4"});  // never the busy GPU 1
}

// --auto-select-gpus with the real pltrun over the fake inventory (PLTRUN_FAKE_GPUS plus
// PLTRUN_FAKE_GPU_BUSY / PLTRUN_FAKE_GPU_MODE) and real GPU locks in a directory of the
// test's (PLTRUN_GPU_LOCK_DIR): the free GPUs reach the workers, too few free is one line
// and exit 2 with no worker started, and two pltruns started together get disjoint GPUs.
// Real other users (helpers/other_user.h) share a sticky lock directory, as /run/lock,
// hold its choosing lock, plant the directory or a link, and name their processes.

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "e2e/elastic_job.h"
#include "helpers/child_process.h"
#include "helpers/fake_sysfs.h"
#include "helpers/other_user.h"
#include "helpers/scoped_env.h"
#include "helpers/temp_dir.h"
#include "helpers/worker_env_file.h"

using namespace pltrun::test;
using Catch::Matchers::Contains;

// Catch2 2 has no SKIP: a test that needs other users says why it did not run, and ends.
#define SKIP_WITHOUT_OTHER_USERS()                     \
  if (!canActAsOtherUsers()) {                         \
    WARN("skipped: needs root to act as other users"); \
    return;                                            \
  }

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
Finished runAutoSelect(Args flags, const Args& fake, const std::string& locks, const TempDir& dir) {
  flags.insert(flags.end(), {"--auto-select-gpus", testWorker(), "env", dir.path()});
  Args env{"PLTRUN_FAKE_GPU_BUSY", "PLTRUN_FAKE_GPU_MODE", "CUDA_VISIBLE_DEVICES", "PLTRUN_GPU_LOCK_DIR=" + locks};
  env.insert(env.end(), fake.begin(), fake.end());
  return runPltrun(flags, env);
}

// A directory shared as /run/lock is: root's, mode 1777 (or `mode`): every user may make
// files in it, and only a file's owner (or root) may delete it.
void shareDirectory(const TempDir& dir, mode_t mode = 01777) { REQUIRE(chmod(dir.path().c_str(), mode) == 0); }

// Runs a Python program as `user`, which says `ready` on stderr once it has done its part.
std::unique_ptr<ChildProcess> pythonAs(const OtherUser& user, const std::string& program, const Args& args = {}) {
  Args argv{"/usr/bin/python3", "-c", program};
  argv.insert(argv.end(), args.begin(), args.end());
  auto child = std::make_unique<ChildProcess>(asUser(user, argv));
  REQUIRE(child->waitForStderr("ready", std::chrono::seconds(30)));
  return child;
}

// pltrun --devices `devices` --auto-select-gpus run as `user` to its end, its `env` worker
// writing into `out`; checks that it succeeded.
Finished autoSelectAs(const OtherUser& user, const std::string& devices, const TempDir& out, const Args& env) {
  ChildProcess pltrun(
      asUser(user, pltrunCommand({"--devices", devices, "--auto-select-gpus", testWorker(), "env", out.path()})), env);
  Finished run = pltrun.wait(std::chrono::seconds(60));
  INFO(run.err);
  CHECK(run.status == 0);
  return run;
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
    Finished run = runAutoSelect(
        {"--devices", "2"}, {"PLTRUN_FAKE_GPUS=4", "PLTRUN_FAKE_GPU_BUSY=0:1234:python,2:5678"}, locks.path(), dir);
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
                                 locks.path(), dir);
    INFO(run.err);
    REQUIRE(run.status == 0);
    CHECK(workerEnvironment(dir, 0)["CUDA_VISIBLE_DEVICES"] == "4,7");
    CHECK(workerEnvironment(dir, 1)["LOCAL_WORLD_SIZE"] == "2");
  }
  SECTION("without --devices, --nproc-per-node N asks for N free GPUs") {
    Finished run = runAutoSelect(
        {"--nproc-per-node", "1"},
        {"PLTRUN_FAKE_GPUS=2", "PLTRUN_FAKE_GPU_BUSY=0:1234", "PLTRUN_FAKE_GPU_MODE=exclusive"}, locks.path(), dir);
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
      {"PLTRUN_FAKE_GPUS=3", "PLTRUN_FAKE_GPU_BUSY=0:1234:python,2:" + self, "PLTRUN_FAKE_GPU_MODE=exclusive"},
      locks.path(), dir);
  INFO(run.err);
  CHECK(run.status == 2);
  CHECK(lineCount(run.err) == 1);
  CHECK_THAT(run.err, Contains("asked for 2 free GPUs, but 1 of the 3 visible GPUs is free (GPU 1)"));
  CHECK_THAT(run.err, Contains("GPU 0 (exclusive mode) held by pid 1234 (python)"));
  CHECK_THAT(run.err, Contains("GPU 2 (exclusive mode) held by pid " + self + " (e2e_tests)"));
  CHECK(std::filesystem::is_empty(dir.path()));
  SECTION("an explicit list has nothing to choose: refused the same way") {
    Finished listed = runAutoSelect({"--devices", "1,3"}, {"PLTRUN_FAKE_GPUS=4"}, locks.path(), dir);
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
  pltrun::test::ScopedEnv gpus("PLTRUN_FAKE_GPUS", "5"), busy("PLTRUN_FAKE_GPU_BUSY", "1:1234:python"),
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

TEST_CASE("another user holding pltrun-choosing.lock delays a job 5 s at most, and is named",
          "[devices][auto_select_gpus][other_users]") {
  SKIP_WITHOUT_OTHER_USERS();
  TempDir locks, dir;
  shareDirectory(locks);
  const std::string choosing = locks / "pltrun-choosing.lock";
  auto holder = pythonAs(otherUser(1),
                         "import fcntl, sys, time\n"
                         "f = open(sys.argv[1], 'a')\n"
                         "fcntl.flock(f, fcntl.LOCK_EX)\n"
                         "print('ready', file=sys.stderr, flush=True)\n"
                         "time.sleep(120)\n",
                         {choosing});
  Finished run = runAutoSelect({"--devices", "1"}, {"PLTRUN_FAKE_GPUS=1"}, locks.path(), dir);
  INFO(run.err);
  CHECK(run.status == 0);
  CHECK_THAT(run.err, Contains("--auto-select-gpus: pid " + std::to_string(holder->pid()) + " (python3, user " +
                               otherUser(1).name + ") has held " + choosing + " for 5.0 s; choosing without it"));
  CHECK(workerEnvironment(dir, 0)["CUDA_VISIBLE_DEVICES"] == "0");
  holder->signal(SIGKILL);
  holder->wait(std::chrono::seconds(30));
}

TEST_CASE("a GPU lock directory another user made, or a link, is refused: one line, exit 2, no worker",
          "[devices][auto_select_gpus][other_users]") {
  SKIP_WITHOUT_OTHER_USERS();
  TempDir top, dir, target;  // target: root's alone (mode 0700)
  shareDirectory(top);
  const std::string locks = top / "pltrun";
  const OtherUser& other = otherUser(1);
  SECTION("made by another user, writable by all: they could delete any lock in it") {
    REQUIRE(shellAs(other, "mkdir -m 0777 '" + locks + "'") == 0);
    Finished run = runAutoSelect({"--devices", "1"}, {"PLTRUN_FAKE_GPUS=1"}, locks, dir);
    CHECK(run.status == 2);
    CHECK(lineCount(run.err) == 1);
    CHECK_THAT(run.err, Contains("the GPU lock directory '" + locks + "' belongs to user " + other.name));
    CHECK(std::filesystem::is_empty(locks));
  }
  SECTION("a symbolic link another user made into a directory of root's") {
    REQUIRE(shellAs(other, "ln -s '" + target.path() + "' '" + locks + "'") == 0);
    Finished run = runAutoSelect({"--devices", "1"}, {"PLTRUN_FAKE_GPUS=1"}, locks, dir);
    CHECK(run.status == 2);
    CHECK(lineCount(run.err) == 1);
    CHECK_THAT(run.err, Contains("the GPU lock directory '" + locks + "' is a symbolic link"));
    CHECK(std::filesystem::is_empty(target.path()));
  }
  CHECK(std::filesystem::is_empty(dir.path()));
}

TEST_CASE("pltruns of different users sharing a lock directory keep off each other's GPUs",
          "[devices][auto_select_gpus][other_users]") {
  SKIP_WITHOUT_OTHER_USERS();
  TempDir locks, third, second, again;
  shareDirectory(locks);
  for (const TempDir* out : {&third, &second, &again}) shareDirectory(*out, 0777);
  const OtherUser& secondUser = otherUser(1);
  const OtherUser& thirdUser = otherUser(2);
  const Args env{"PLTRUN_FAKE_GPUS=2", "PLTRUN_FAKE_GPU_BUSY", "PLTRUN_FAKE_GPU_MODE", "CUDA_VISIBLE_DEVICES",
                 "PLTRUN_GPU_LOCK_DIR=" + locks.path()};
  const auto timeout = std::chrono::seconds(60);
  ChildProcess holder(
      asUser(thirdUser, pltrunCommand(withFlags({"--devices", "1", "--auto-select-gpus"}, gpusThenWait(third.path())))),
      env);
  REQUIRE(waitForFile(third / "gpus_0", timeout));
  CHECK(readFile(third / "gpus_0") == "0");
  Finished run = autoSelectAs(secondUser, "1", second, env);
  CHECK(workerEnvironment(second, 0)["CUDA_VISIBLE_DEVICES"] == "1");
  CHECK_THAT(run.err,
             Contains("GPU 0 is taken by pltrun pid " + std::to_string(holder.pid()) + " of user " + thirdUser.name));
  std::ofstream(third / "release").put('\n');
  CHECK(holder.wait(timeout).status == 0);
  // The third user's files stay behind, writable by them alone (as fs.protected_regular=1
  // treats another user's file in a sticky directory): read-only is enough to lock and check.
  REQUIRE(shellAs(thirdUser,
                  "find '" + locks.path() + "' -user " + thirdUser.name + " -type f -exec chmod go-w {} +") == 0);
  autoSelectAs(secondUser, "2", again, env);
  CHECK(workerEnvironment(again, 0)["CUDA_VISIBLE_DEVICES"] == "0,1");
}

TEST_CASE("another user's process name reaches the refusal escaped", "[devices][auto_select_gpus][other_users]") {
  SKIP_WITHOUT_OTHER_USERS();
  TempDir locks, dir;
  // Any user names their own processes: this name sets the terminal's title.
  auto named = pythonAs(otherUser(1),
                        "import sys, time\n"
                        "open('/proc/self/comm', 'w').write('\\x1b]0;pwned\\x07x')\n"
                        "print('ready', file=sys.stderr, flush=True)\n"
                        "time.sleep(120)\n");
  const std::string pid = std::to_string(named->pid());
  Finished run =
      runAutoSelect({"--devices", "1"}, {"PLTRUN_FAKE_GPUS=1", "PLTRUN_FAKE_GPU_BUSY=0:" + pid}, locks.path(), dir);
  CHECK(run.status == 2);
  CHECK(run.err.find('\x1b') == std::string::npos);
  CHECK(run.err.find('\x07') == std::string::npos);
  CHECK_THAT(run.err, Contains("GPU 0 held by pid " + pid + " (\\x1b]0;pwned\\x07x)"));
  named->signal(SIGKILL);
  named->wait(std::chrono::seconds(30));
}

TEST_CASE("CUDA's GPU N is found through NVML by PCI bus id, not taken as NVML's index",
          "[devices][auto_select_gpus][nvml]") {
  // NVML lists bus 3b first, then 1a (helpers/fake_nvml.cc); CUDA, by bus id, calls 1a GPU 0.
  // A fake sysfs for this 2-CPU machine puts bus 1a on NUMA node 1 (CPU 1), 3b on node 0.
  TempDir dir;
  const std::string sys = dir / "sys";
  writeTwoNodeSysfs(sys, "0000:3b:00.0", "0000:1a:00.0");
  const auto bind = [&](const std::string& models, const Args& more) {
    Args env{"LD_LIBRARY_PATH=" FAKE_NVML_DIR,
             "FAKE_NVML_GPUS=" + models,
             "PLTRUN_SYSFS_ROOT=" + sys,
             "PLTRUN_FAKE_GPUS",
             "PLTRUN_FAKE_GPU_PCI",
             "CUDA_VISIBLE_DEVICES",
             "CUDA_DEVICE_ORDER"};
    env.insert(env.end(), more.begin(), more.end());
    return runPltrun({"--nproc-per-node", "1", "--numa-binding", "node", "--no-python", "/bin/sh", "-c",
                      "grep Cpus_allowed_list /proc/self/status"},
                     env);
  };
  SECTION("GPUs of one model: CUDA numbers them by bus id, whatever CUDA_DEVICE_ORDER says") {
    for (const Args& order : {Args{}, Args{"CUDA_DEVICE_ORDER=PCI_BUS_ID"}}) {
      Finished run = bind("3b:NVIDIA H100,1a:NVIDIA H100", order);
      INFO(run.out << run.err);
      CHECK(run.status == 0);
      CHECK_THAT(run.err, Contains("local rank 0 (GPU 0000:1a:00.0 on NUMA node 1) runs on CPUs 1"));
      CHECK_THAT(run.out, Contains("[rank 0] Cpus_allowed_list:\t1\n"));
    }
  }
  SECTION("--auto-select-gpus locks the GPU CUDA's index names: CUDA's 0 is NVML's 1") {
    TempDir locks, out;
    Finished run = runAutoSelect({"--devices", "1"},
                                 {"LD_LIBRARY_PATH=" FAKE_NVML_DIR, "FAKE_NVML_GPUS=3b:NVIDIA H100,1a:NVIDIA H100",
                                  "PLTRUN_FAKE_GPUS", "CUDA_DEVICE_ORDER"},
                                 locks.path(), out);
    INFO(run.err);
    CHECK(run.status == 0);
    CHECK(workerEnvironment(out, 0)["CUDA_VISIBLE_DEVICES"] == "0");
    CHECK(std::filesystem::exists(locks / ("pltrun-gpu-1." + std::to_string(geteuid()) + ".lock")));
  }
  SECTION("GPUs of different models: bus order with CUDA_DEVICE_ORDER=PCI_BUS_ID, else one line and exit 2") {
    Finished run = bind("3b:NVIDIA GeForce RTX 4090,1a:NVIDIA GeForce GTX 1080", {"CUDA_DEVICE_ORDER=PCI_BUS_ID"});
    INFO(run.err);
    CHECK(run.status == 0);
    CHECK_THAT(run.err, Contains("local rank 0 (GPU 0000:1a:00.0 on NUMA node 1)"));
    Finished refused = bind("3b:NVIDIA GeForce RTX 4090,1a:NVIDIA GeForce GTX 1080", {});
    CHECK(refused.status == 2);
    CHECK(lineCount(refused.err) == 1);
    CHECK_THAT(refused.err, Contains("--numa-binding: no PCI address for GPU 0 (CUDA numbers GPUs of different models "
                                     "(NVIDIA GeForce GTX 1080, NVIDIA GeForce RTX 4090) fastest first") &&
                                Contains("set CUDA_DEVICE_ORDER=PCI_BUS_ID"));
  }
}

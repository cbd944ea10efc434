// torchrun 2.14's newer flags on the real pltrun with real workers: the filtered copies of
// --duplicate-stdout-filters / --duplicate-stderr-filters (one file per attempt, every
// worker's matching lines, prefixed), --virtual-local-rank's environment, and
// --log-line-prefix-template on the console.

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "helpers/child_process.h"
#include "helpers/fake_sysfs.h"
#include "helpers/temp_dir.h"

using namespace pltrun::test;

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Each worker prints matching and other lines on both streams; attempt 0's rank 1 then fails.
const std::string kChatty =
    "echo \"apple from $RANK\"; echo pear; echo \"or,ange $RANK\"; echo \"Error $RANK\" >&2; echo warning >&2; "
    "[ \"$TORCHELASTIC_RESTART_COUNT$RANK\" = 01 ] && exit 3; exit 0";

}  // namespace

TEST_CASE("flags --duplicate-*-filters copy every worker's matching lines to one file per attempt",
          "[e2e][torchrun214]") {
  TempDir dir;
  Finished run = runPltrun({"--nproc-per-node", "2", "--max-restarts", "1", "--log-dir", dir / "logs", "--rdzv-id",
                            "dup", "--duplicate-stdout-filters", "apple,or,,ange", "--duplicate-stderr-filters",
                            "Error", "--no-python", "/bin/sh", "-c", kChatty});
  INFO(run.out << run.err);
  REQUIRE(run.status == 0);
  for (const std::string attempt : {"attempt_0", "attempt_1"}) {
    const std::string out = readFile(dir / ("logs/dup/" + attempt + "/filtered_stdout.log"));
    const std::string err = readFile(dir / ("logs/dup/" + attempt + "/filtered_stderr.log"));
    CAPTURE(attempt, out, err);
    for (const std::string rank : {"0", "1"}) {
      CHECK(contains(out, "[rank " + rank + "] apple from " + rank + "\n"));
      CHECK(contains(out, "[rank " + rank + "] or,ange " + rank + "\n"));  // ",," is a comma
      CHECK(contains(err, "[rank " + rank + "] Error " + rank + "\n"));
    }
    CHECK_FALSE(contains(out, "pear"));
    CHECK_FALSE(contains(err, "warning"));
  }
  // The full logs are untouched by the filters.
  CHECK(contains(readFile(dir / "logs/dup/attempt_0/0/stdout.log"), "pear"));
}

TEST_CASE("flag --duplicate-stdout-filters without --log-dir logs to a new temporary directory, as torchrun",
          "[e2e][torchrun214]") {
  TempDir dir;
  Finished run = runPltrun({"--duplicate-stdout-filters", "apple", "--no-python", "/bin/sh", "-c", "echo apple"},
                           {"TMPDIR=" + dir.path()});
  INFO(run.out << run.err);
  REQUIRE(run.status == 0);
  const size_t at = run.err.find("worker logs go to ");
  REQUIRE(at != std::string::npos);
  const std::string root = run.err.substr(at + 18, run.err.find('\n', at) - at - 18);
  CHECK(readFile(root + "/attempt_0/filtered_stdout.log") == "[rank 0] apple\n");
}

TEST_CASE("flag --virtual-local-rank gives each worker LOCAL_RANK 0 and only its own GPU", "[e2e][torchrun214]") {
  Finished run = runPltrun({"--nproc-per-node", "2", "--virtual-local-rank", "--log-line-prefix-template",
                            "${hostname}:${rank}: ", "--no-python", "/bin/sh", "-c",
                            "echo \"LOCAL_RANK=$LOCAL_RANK CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES\""},
                           {"CUDA_VISIBLE_DEVICES=3,5"});
  INFO(run.out << run.err);
  REQUIRE(run.status == 0);
  CHECK(contains(run.out, ":0: LOCAL_RANK=0 CUDA_VISIBLE_DEVICES=3\n"));
  CHECK(contains(run.out, ":1: LOCAL_RANK=0 CUDA_VISIBLE_DEVICES=5\n"));
  CHECK_FALSE(contains(run.out, "[rank "));  // the template replaced the default prefix

  Finished tooFew =
      runPltrun({"--nproc-per-node", "2", "--virtual-local-rank", "/bin/true"}, {"CUDA_VISIBLE_DEVICES=3"});
  CHECK(tooFew.status == 2);
  CHECK(contains(tooFew.err, "--virtual-local-rank: local rank 1 has no GPU of its own"));
}

TEST_CASE("flag --numa-binding node runs each worker on the CPUs of its GPU's NUMA node", "[e2e][torchrun214]") {
  // A fake sysfs for this 2-CPU machine: GPU 0 on node 0 (CPU 0), GPU 1 on node 1 (CPU 1).
  TempDir dir;
  const std::string sys = dir / "sys";
  writeTwoNodeSysfs(sys, "0000:01:00.0", "0000:81:00.0");
  const std::vector<std::string> env = {"PLTRUN_FAKE_GPUS=2", "PLTRUN_FAKE_GPU_PCI=0000:01:00.0,0000:81:00.0",
                                        "PLTRUN_SYSFS_ROOT=" + sys};
  Finished run = runPltrun({"--nproc-per-node", "gpu", "--numa-binding", "node", "--no-python", "/bin/sh", "-c",
                            "grep Cpus_allowed_list /proc/self/status"},
                           env);
  INFO(run.out << run.err);
  REQUIRE(run.status == 0);
  CHECK(contains(run.out, "[rank 0] Cpus_allowed_list:\t0\n"));
  CHECK(contains(run.out, "[rank 1] Cpus_allowed_list:\t1\n"));
  CHECK(contains(run.err, "local rank 1 (GPU 0000:81:00.0 on NUMA node 1) runs on CPUs 1"));

  Finished noGpu = runPltrun({"--nproc-per-node", "2", "--numa-binding", "node", "/bin/true"}, {"PLTRUN_FAKE_GPUS=0"});
  CHECK(noGpu.status == 2);
  CHECK(contains(noGpu.err, "--numa-binding binds local rank N near GPU N, but 2 workers see 0 GPU(s)"));
}

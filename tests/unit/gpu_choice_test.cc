// --auto-select-gpus' choice (chooseFreeGpus) over fake inventories: free, busy, exclusive,
// prohibited, locked by another pltrun, unknown to NVML; fewer free than asked; -1.

#include "launcher/placement/gpu_choice.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

using Catch::Matchers::Contains;
using pltrun::chooseFreeGpus;
using pltrun::GpuChoice;
using pltrun::GpuComputeMode;
using pltrun::GpuProcess;
using pltrun::GpuState;

namespace {

using Indices = std::vector<int>;

// `count` GPUs "0".."count-1", every one free.
std::vector<GpuState> freeGpus(int count) {
  std::vector<GpuState> gpus;
  for (int index = 0; index < count; ++index) {
    GpuState gpu;
    gpu.id = std::to_string(index);
    gpu.lockKey = gpu.id;
    gpus.push_back(gpu);
  }
  return gpus;
}

}  // namespace

TEST_CASE("free GPUs are chosen in index order, as many as asked", "[auto_select_gpus]") {
  const auto gpus = freeGpus(4);
  CHECK(chooseFreeGpus(gpus, 1).chosen == Indices{0});
  CHECK(chooseFreeGpus(gpus, 3).chosen == Indices{0, 1, 2});
  CHECK(chooseFreeGpus(gpus, 4).chosen == Indices{0, 1, 2, 3});
  CHECK(chooseFreeGpus(gpus, 4).refusal.empty());
  SECTION("-1 takes every free one") { CHECK(chooseFreeGpus(gpus, -1).chosen == Indices{0, 1, 2, 3}); }
  SECTION("the snapshot's order is CUDA_VISIBLE_DEVICES' order: indices into it") {
    auto listed = freeGpus(2);
    listed[0].id = "5";
    listed[1].id = "GPU-abc";
    CHECK(chooseFreeGpus(listed, 2).chosen == Indices{0, 1});
  }
}

TEST_CASE("busy GPUs are passed over: processes, prohibited, another pltrun's, unknown", "[auto_select_gpus]") {
  auto gpus = freeGpus(6);
  gpus[0].processes = {GpuProcess{1234, "python"}};
  gpus[1].mode = GpuComputeMode::Prohibited;
  gpus[2].lockedByPltrun = 777;
  gpus[3].unknown = "could not be checked: NVML does not know it";
  gpus[5].mode = GpuComputeMode::ExclusiveProcess;  // exclusive but empty: free
  CHECK(chooseFreeGpus(gpus, 2).chosen == Indices{4, 5});
  CHECK(chooseFreeGpus(gpus, -1).chosen == Indices{4, 5});
  CHECK(chooseFreeGpus(gpus, 1).chosen == Indices{4});
  CHECK(pltrun::gpuIsFree(gpus[4]));
  CHECK_FALSE(pltrun::gpuIsFree(gpus[0]));
}

TEST_CASE("too few free GPUs: no GPU and one line naming asked, free and every holder", "[auto_select_gpus]") {
  auto gpus = freeGpus(4);
  gpus[0].processes = {GpuProcess{1234, "python"}};
  gpus[1].processes = {GpuProcess{42, ""}, GpuProcess{43, "trainer"}};
  gpus[1].mode = GpuComputeMode::ExclusiveProcess;
  gpus[3].lockedByPltrun = 777;
  const GpuChoice choice = chooseFreeGpus(gpus, 2);
  CHECK(choice.chosen.empty());
  CHECK(choice.refusal.find('\n') == std::string::npos);
  CHECK(choice.refusal ==
        "--auto-select-gpus: asked for 2 free GPUs, but 1 of the 4 visible GPUs is free (GPU 2); GPU 0 held by pid "
        "1234 (python); GPU 1 (exclusive mode) held by pids 42, 43 (trainer); GPU 3 is taken by pltrun pid 777; ask "
        "for fewer, or wait for them to end");
  SECTION("a lock file without a pid names pltrun alone") {
    gpus[3].lockedByPltrun = 0;
    CHECK_THAT(chooseFreeGpus(gpus, 2).refusal, Contains("GPU 3 is taken by pltrun;"));
  }
  SECTION("prohibited and unknown GPUs say why") {
    gpus[2].mode = GpuComputeMode::Prohibited;
    gpus[3].lockedByPltrun.reset();
    gpus[3].unknown = "could not be checked: NVML does not know it";
    const std::string refusal = chooseFreeGpus(gpus, 1).refusal;
    CHECK_THAT(refusal, Contains("0 of the 4 visible GPUs are free;"));
    CHECK_THAT(refusal, Contains("GPU 2 is in compute mode Prohibited"));
    CHECK_THAT(refusal, Contains("GPU 3 could not be checked: NVML does not know it"));
  }
}

TEST_CASE("every free GPU (-1) with none free, and more asked than visible, are refused", "[auto_select_gpus]") {
  auto gpus = freeGpus(2);
  gpus[0].processes = {GpuProcess{1, "a"}};
  gpus[1].processes = {GpuProcess{2, "b"}};
  const GpuChoice none = chooseFreeGpus(gpus, -1);
  CHECK(none.chosen.empty());
  CHECK_THAT(none.refusal, Contains("asked for every free GPU, but 0 of the 2 visible GPUs are free; GPU 0 held by"));
  const GpuChoice tooMany = chooseFreeGpus(freeGpus(2), 3);
  CHECK(tooMany.chosen.empty());
  CHECK(tooMany.refusal ==
        "--auto-select-gpus: asked for 3 free GPUs, but 2 of the 2 visible GPUs are free (GPUs 0, 1); "
        "ask for fewer");
  CHECK(
      chooseFreeGpus({}, -1).refusal ==
      "--auto-select-gpus: asked for every free GPU, but no GPU is visible (no NVIDIA driver, or CUDA_VISIBLE_DEVICES "
      "hides them)");
}

TEST_CASE("names from other users reach the refusal line escaped", "[auto_select_gpus]") {
  auto gpus = freeGpus(2);
  // Any user names their own processes (/proc/PID/comm): this one sets the window title.
  gpus[0].processes = {GpuProcess{1234, "\x1b]0;pwned\x07x"}};
  gpus[1].lockedByPltrun = 99;
  gpus[1].lockedByUser = "bob";
  const std::string refusal = chooseFreeGpus(gpus, 1).refusal;
  CHECK(refusal.find('\x1b') == std::string::npos);
  CHECK(refusal.find('\x07') == std::string::npos);
  CHECK_THAT(refusal, Contains("GPU 0 held by pid 1234 (\\x1b]0;pwned\\x07x)") &&
                          Contains("GPU 1 is taken by pltrun pid 99 of user bob"));
}

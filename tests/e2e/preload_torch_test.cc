// Issue 43, item 2 with torch (1.13, 2.6 and 2.14): a worker forked from a zygote that
// preloaded torch sees what a cold one sees (tests/e2e/worker_properties.py), finds CUDA
// not initialized (a zygote must never touch it: a forked child cannot use its parent's CUDA
// context), starts DataLoader workers, and its @record error file reaches the failure
// report. The torch training matrix with the zygote is in torch_matrix_test.cc.

#include <algorithm>
#include <catch2/catch.hpp>

#include "e2e/property_probe.h"
#include "e2e/torch_runtimes.h"
#include "helpers/temp_dir.h"

using namespace pltrun::test;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

void compareWithTorch(const TorchRuntime& torch) {
  if (!torch.available()) return;
  TempDir dir;
  const std::vector<std::string> env = torch.workerEnvironment(dir.path());
  const std::vector<std::string> probeFlags = {"--multiprocessing", "--cuda", "--dataloader",
                                               "--environment-after-preload"};
  ProbeRun cold = runProbe({}, ProgramForm::Script, dir, "cold", env, probeFlags);
  ProbeRun forked = runProbe({"--preload", "torch"}, ProgramForm::Script, dir, "forked", env, probeFlags);
  INFO("torch " << torch.version << "\ncold:\n" << cold.finished.err << "forked:\n" << forked.finished.err);
  REQUIRE(cold.finished.status == 0);
  REQUIRE(forked.finished.status == 0);
  const bool direct = torch.pythonExec == "/usr/bin/python3";  // not through a chroot's wrapper
  for (int rank = 0; rank < 2; ++rank) {
    checkEveryWorker(cold, rank, true, direct);
    checkEveryWorker(forked, rank, true, direct);
    const json& report = forked.raw[rank];
    CHECK(report["process"]["ppid"] == forked.pltrun);  // forked inside the chroot too: pltrun's child
    const json preloaded = report["interpreter"]["preloaded_at_start"];
    CHECK(std::find(preloaded.begin(), preloaded.end(), "torch") != preloaded.end());
    CHECK(report["cuda"]["initialized"] == false);
    CHECK(report["cuda"]["in_bad_fork"] != true);
    if (report["cuda"]["available"] != true) WARN("no GPU here: CUDA could not have been initialized anyway");
    CHECK(report["dataloader"] == json::array({0, 1, 4, 9}));
    CHECK(cold.raw[rank]["dataloader"] == json::array({0, 1, 4, 9}));
  }
  for (const ProbeRun* run : {&cold, &forked}) {
    checkOutputLines(*run);
    checkRanksDiffer(*run, "/interpreter/random");
    checkRanksDiffer(*run, "/interpreter/numpy_random");  // torch imports numpy where it is installed
  }
  // The documented rule: a forked worker's environment is a cold one's after the preloaded
  // imports (torch 2.14's inductor sets TORCHINDUCTOR_CACHE_DIR, for one).
  for (int rank = 0; rank < 2; ++rank) {
    REQUIRE(cold.reports[rank].contains("environ_after_preload"));
    cold.reports[rank]["environ"] = cold.reports[rank]["environ_after_preload"];
    cold.reports[rank].erase("environ_after_preload");
    forked.reports[rank].erase("environ_after_preload");
  }
  checkLikeCold(cold, forked, direct);
}

const std::string kTorchWorkers = std::string(TESTS_SOURCE_DIR) + "/e2e/torch_workers.py";

void checkRecordedError(const TorchRuntime& torch) {
  if (!torch.available()) return;
  TempDir dir;
  ChildProcess pltrun(pltrunCommand({"--nproc-per-node", "2", "--preload", "torch", kTorchWorkers, "raise"}),
                      torch.workerEnvironment(dir.path()));
  const Finished run = pltrun.wait(120s);
  INFO("torch " << torch.version << "\n" << run.err);
  CHECK(run.status == 1);
  CHECK_THAT(run.err, Catch::Contains("error: ValueError: bad batch on rank"));
  CHECK_THAT(run.err, Catch::Contains(" (forked)"));  // torch was imported before the script began
  CHECK_THAT(run.err, Catch::Contains("traceback:"));
  CHECK_THAT(run.err, Catch::Contains("torch_workers.py"));
  CHECK_THAT(run.err, !Catch::Contains("last lines of its stderr"));  // the error file, not a guess
}

}  // namespace

TEST_CASE("preload torch: a forked worker sees what a cold one sees, torch 1.13", "[preload][torch]") {
  compareWithTorch(torch113());
}
TEST_CASE("preload torch: a forked worker sees what a cold one sees, torch 2.6", "[preload][torch][torch2]") {
  compareWithTorch(torch26());
}
TEST_CASE("preload torch: a forked worker sees what a cold one sees, torch 2.14", "[preload][torch][torch2]") {
  compareWithTorch(torch214());
}

TEST_CASE("preload torch: a forked worker's @record error file is in the failure report", "[preload][torch]") {
  checkRecordedError(GENERATE(torch113(), torch26(), torch214()));
}

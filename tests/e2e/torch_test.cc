// PyTorch interoperability with Debian's python3-torch, run by /usr/bin/python3: workers
// join a gloo process group from pltrun's environment alone, and torch's own @record
// error files reach pltrun's failure report.

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <thread>

#include "helpers/child_process.h"

using namespace pltrun::test;

namespace {

const std::string kScript = std::string(TESTS_SOURCE_DIR) + "/e2e/torch_workers.py";
const std::vector<std::string> kDebianPython = {"PYTHON_EXEC=/usr/bin/python3"};

void requireTorch() {
  ChildProcess probe({"/usr/bin/python3", "-c", "import torch.distributed"});
  Finished result = probe.wait(std::chrono::seconds(60));
  INFO("Debian's python3-torch is needed: run scripts/install-deps.sh --with-torch\n" << result.err);
  REQUIRE(result.status == 0);
}

}  // namespace

TEST_CASE("4 torch workers all-reduce over gloo through pltrun's agent store", "[torch]") {
  requireTorch();
  TempDir dir;
  Finished run = runPltrun({"--nproc-per-node", "4", kScript, "allreduce", dir.path()}, kDebianPython);
  INFO(run.out << run.err);
  REQUIRE(run.status == 0);
  for (int rank = 0; rank < 4; ++rank) {
    CHECK(readFile(dir / ("result_" + std::to_string(rank))) == "10 [0, 1, 2, 3] agent-store=True");
  }
}

TEST_CASE("with --no-agent-store rank 0 hosts the store, as under torchrun", "[torch]") {
  requireTorch();
  TempDir dir;
  Finished run = runPltrun({"--no-agent-store", "--nproc-per-node", "3", kScript, "allreduce", dir.path()},
                           kDebianPython);
  INFO(run.out << run.err);
  REQUIRE(run.status == 0);
  CHECK(readFile(dir / "result_2") == "6 [0, 1, 2] agent-store=False");
}

TEST_CASE("a restarted torch group meets again through the agent store", "[torch][restart]") {
  requireTorch();
  TempDir dir;
  Finished run = runPltrun({"--nproc-per-node", "2", "--max-restarts", "1", kScript, "allreduce", dir.path(),
                            "--fail-first-attempt"},
                           kDebianPython);
  INFO(run.out << run.err);
  REQUIRE(run.status == 0);
  CHECK(readFile(dir / "result_1") == "3 [0, 1] agent-store=True");
  CHECK(run.err.find("restarting the worker group") != std::string::npos);
}

TEST_CASE("torch's @record error file is shown in the failure report", "[torch]") {
  requireTorch();
  Finished run = runPltrun({"--nproc-per-node", "2", kScript, "raise"}, kDebianPython);
  INFO(run.err);
  CHECK(run.status == 1);
  CHECK(run.err.find("error: ValueError: bad batch on rank") != std::string::npos);
  CHECK(run.err.find("traceback:") != std::string::npos);
  CHECK(run.err.find("torch_workers.py") != std::string::npos);
}

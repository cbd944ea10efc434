// PyTorch interoperability, with torch 1.13 (Debian bookworm), torch 2.6 (Debian trixie) and
// torch 2.14 (Debian forky; both in test chroots) alike: workers join a gloo process group from pltrun's environment
// alone, a restarted group meets again, and torch's own @record error files reach pltrun's
// failure report. Each test case runs once per torch version (GENERATE).

#include <catch2/catch.hpp>

#include "e2e/torch_runtimes.h"
#include "helpers/child_process.h"
#include "helpers/temp_dir.h"

using namespace pltrun::test;
using namespace std::chrono_literals;

namespace {

const std::string kScript = std::string(TESTS_SOURCE_DIR) + "/e2e/torch_workers.py";

Finished runTorch(const TorchRuntime& torch, const TempDir& dir, const std::vector<std::string>& args) {
  torch.available();
  ChildProcess pltrun(pltrunCommand(args), torch.workerEnvironment(dir.path()));
  return pltrun.wait(120s);
}

}  // namespace

TEST_CASE("4 torch workers all-reduce over gloo through pltrun's agent store", "[torch]") {
  const TorchRuntime torch = GENERATE(torch113(), torch26(), torch214());
  TempDir dir;
  Finished run = runTorch(torch, dir, {"--nproc-per-node", "4", kScript, "allreduce", dir.path()});
  INFO("torch " << torch.version << "\n" << run.out << run.err);
  REQUIRE(run.status == 0);
  for (int rank = 0; rank < 4; ++rank) {
    CHECK(readFile(dir / ("result_" + std::to_string(rank))) == "10 [0, 1, 2, 3] agent-store=True");
  }
}

TEST_CASE("with --no-agent-store rank 0 hosts the store, as under torchrun", "[torch]") {
  const TorchRuntime torch = GENERATE(torch113(), torch26(), torch214());
  TempDir dir;
  Finished run = runTorch(torch, dir, {"--no-agent-store", "--nproc-per-node", "3", kScript, "allreduce", dir.path()});
  INFO("torch " << torch.version << "\n" << run.out << run.err);
  REQUIRE(run.status == 0);
  CHECK(readFile(dir / "result_2") == "6 [0, 1, 2] agent-store=False");
}

TEST_CASE("DeepSpeed's command line: --num_gpus workers get the --local_rank=N their argparse requires",
          "[torch][deepspeed]") {
  const TorchRuntime torch = GENERATE(torch113(), torch26(), torch214());
  TempDir dir;
  torch.available();
  // --num_gpus chooses GPUs 0 and 1 (CUDA_VISIBLE_DEVICES=0,1): two GPUs as far as pltrun
  // can tell; the gloo workers use none.
  std::vector<std::string> environment = torch.workerEnvironment(dir.path());
  environment.push_back("PLTRUN_FAKE_GPUS=2");
  ChildProcess pltrun(pltrunCommand({"--num_gpus", "2", kScript, "deepspeed", dir.path()}), environment);
  Finished run = pltrun.wait(120s);
  INFO("torch " << torch.version << "\n" << run.out << run.err);
  REQUIRE(run.status == 0);
  CHECK(readFile(dir / "result_0") == "3 local_rank=0");
  CHECK(readFile(dir / "result_1") == "3 local_rank=1");
}

TEST_CASE("a restarted torch group meets again through the agent store", "[torch][restart]") {
  const TorchRuntime torch = GENERATE(torch113(), torch26(), torch214());
  TempDir dir;
  Finished run = runTorch(
      torch, dir,
      {"--nproc-per-node", "2", "--max-restarts", "1", kScript, "allreduce", dir.path(), "--fail-first-attempt"});
  INFO("torch " << torch.version << "\n" << run.out << run.err);
  REQUIRE(run.status == 0);
  CHECK(readFile(dir / "result_1") == "3 [0, 1] agent-store=True");
  CHECK(run.err.find("restarting the worker group") != std::string::npos);
}

TEST_CASE("torch's @record error file is shown in the failure report", "[torch]") {
  const TorchRuntime torch = GENERATE(torch113(), torch26(), torch214());
  TempDir dir;
  Finished run = runTorch(torch, dir, {"--nproc-per-node", "2", kScript, "raise"});
  INFO("torch " << torch.version << "\n" << run.err);
  CHECK(run.status == 1);
  CHECK(run.err.find("error: ValueError: bad batch on rank") != std::string::npos);
  CHECK(run.err.find("traceback:") != std::string::npos);
  CHECK(run.err.find("torch_workers.py") != std::string::npos);
  // The recorded error replaces the stderr tail: torch's own message, not a guess.
  CHECK(run.err.find("last lines of its stderr") == std::string::npos);
}

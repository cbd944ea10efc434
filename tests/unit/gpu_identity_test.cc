// Which GPU a worker uses (cudaIdOfWorker, pure), and its NVML index and UUID as DCGM labels
// them (identifyGpus) through the fakes: PLTRUN_FAKE_GPUS and PLTRUN_FAKE_GPU_UUIDS.

#include "launcher/placement/gpu_identity.h"

#include <catch2/catch.hpp>
#include <optional>
#include <string>
#include <vector>

#include "helpers/scoped_env.h"

using pltrun::cudaIdOfWorker;
using pltrun::GpuIdentity;
using pltrun::identifyGpus;
using pltrun::test::ScopedEnv;

TEST_CASE("gpu identity: a worker's GPU is its LOCAL_RANK-th visible one", "[gpu_identity]") {
  CHECK(cudaIdOfWorker(0, std::nullopt, 4) == std::optional<std::string>("0"));
  CHECK(cudaIdOfWorker(3, std::nullopt, 4) == std::optional<std::string>("3"));
  CHECK(cudaIdOfWorker(1, std::string("6,2,4"), 8) == std::optional<std::string>("2"));
  CHECK(cudaIdOfWorker(1, std::string("GPU-a,GPU-b"), 2) == std::optional<std::string>("GPU-b"));
  // --virtual-local-rank: LOCAL_RANK 0 and a list of its own GPU.
  CHECK(cudaIdOfWorker(0, std::string("5"), 8) == std::optional<std::string>("5"));
}

TEST_CASE("gpu identity: a worker that sees fewer GPUs than its LOCAL_RANK has none", "[gpu_identity]") {
  CHECK_FALSE(cudaIdOfWorker(4, std::nullopt, 4));
  CHECK_FALSE(cudaIdOfWorker(0, std::nullopt, 0));          // no GPU at all
  CHECK_FALSE(cudaIdOfWorker(0, std::string(""), 4));       // --devices 0
  CHECK_FALSE(cudaIdOfWorker(2, std::string("0,1"), 4));    // two for three workers
  CHECK_FALSE(cudaIdOfWorker(1, std::string("0,x,1"), 4));  // CUDA stops at x
  CHECK_FALSE(cudaIdOfWorker(-1, std::nullopt, 4));
}

TEST_CASE("gpu identity: fake GPUs have their index and the UUIDs PLTRUN_FAKE_GPU_UUIDS gives", "[gpu_identity]") {
  ScopedEnv gpus("PLTRUN_FAKE_GPUS", std::string("3"));
  ScopedEnv uuids("PLTRUN_FAKE_GPU_UUIDS", std::string("GPU-a, GPU-b"));
  const std::vector<GpuIdentity> found = identifyGpus({"2", "1", "GPU-a", "3", "GPU-z"}, std::nullopt);
  REQUIRE(found.size() == 5);
  CHECK(found[0].nvmlIndex == std::optional<int>(2));
  CHECK(found[0].uuid.empty());  // past the UUIDs' end
  CHECK(found[1].nvmlIndex == std::optional<int>(1));
  CHECK(found[1].uuid == "GPU-b");
  CHECK(found[2].nvmlIndex == std::optional<int>(0));
  CHECK(found[2].uuid == "GPU-a");
  CHECK_FALSE(found[3].nvmlIndex);  // past the fake GPUs
  CHECK_FALSE(found[4].nvmlIndex);  // named by no fake GPU
  CHECK(found[4].uuid.empty());
}

TEST_CASE("gpu identity: fake GPUs without fake UUIDs have their index only", "[gpu_identity]") {
  ScopedEnv gpus("PLTRUN_FAKE_GPUS", std::string("2"));
  ScopedEnv uuids("PLTRUN_FAKE_GPU_UUIDS", std::nullopt);
  const std::vector<GpuIdentity> found = identifyGpus({"0", "1"}, std::nullopt);
  REQUIRE(found.size() == 2);
  CHECK(found[1].nvmlIndex == std::optional<int>(1));
  CHECK(found[1].uuid.empty());
}

// visibleGpuIds reads CUDA_VISIBLE_DEVICES the way CUDA does; physicalGpuCount honours
// PLTRUN_FAKE_GPUS.

#include "launcher/placement/gpu_inventory.h"

#include <catch2/catch.hpp>
#include <optional>
#include <string>
#include <vector>

#include "helpers/scoped_env.h"
#include "launcher/placement/cuda_device_order.h"

using pltrun::physicalGpuCount;
using pltrun::visibleGpuIds;
using pltrun::test::ScopedEnv;

namespace {
using Ids = std::vector<std::string>;
}

TEST_CASE("without CUDA_VISIBLE_DEVICES every physical GPU is visible", "[gpu_inventory]") {
  CHECK(visibleGpuIds(std::nullopt, 0).empty());
  CHECK(visibleGpuIds(std::nullopt, 1) == Ids{"0"});
  CHECK(visibleGpuIds(std::nullopt, 4) == Ids{"0", "1", "2", "3"});
  for (int count = 0; count <= 16; ++count) {
    Ids ids = visibleGpuIds(std::nullopt, count);
    REQUIRE(ids.size() == static_cast<size_t>(count));
    for (int index = 0; index < count; ++index) CHECK(ids[index] == std::to_string(index));
  }
}

TEST_CASE("CUDA_VISIBLE_DEVICES entries are the visible ids, in its order", "[gpu_inventory]") {
  CHECK(visibleGpuIds(std::string("1,0"), 2) == Ids{"1", "0"});
  CHECK(visibleGpuIds(std::string("3"), 4) == Ids{"3"});
  CHECK(visibleGpuIds(std::string("2,5,7"), 8) == Ids{"2", "5", "7"});
  SECTION("spaces around entries are ignored") { CHECK(visibleGpuIds(std::string(" 1 , 0"), 2) == Ids{"1", "0"}); }
}

TEST_CASE("CUDA stops at the first entry it cannot use", "[gpu_inventory]") {
  SECTION("an index beyond the physical GPUs") {
    CHECK(visibleGpuIds(std::string("0,9,1"), 2) == Ids{"0"});
    CHECK(visibleGpuIds(std::string("2"), 2).empty());
  }
  SECTION("a negative index") { CHECK(visibleGpuIds(std::string("1,-1,0"), 2) == Ids{"1"}); }
  SECTION("something that is neither an index nor a UUID") {
    CHECK(visibleGpuIds(std::string("0,x,1"), 2) == Ids{"0"});
    CHECK(visibleGpuIds(std::string("NoDevFiles"), 2).empty());
  }
  SECTION("an empty entry") { CHECK(visibleGpuIds(std::string("0,,1"), 2) == Ids{"0"}); }
  SECTION("a repeated entry") {
    CHECK(visibleGpuIds(std::string("1,1,0"), 2) == Ids{"1"});
    CHECK(visibleGpuIds(std::string("0,1,0"), 2) == Ids{"0", "1"});
  }
}

TEST_CASE("an empty CUDA_VISIBLE_DEVICES hides every GPU", "[gpu_inventory]") {
  CHECK(visibleGpuIds(std::string(""), 4).empty());
  CHECK(visibleGpuIds(std::string(""), 0).empty());
}

TEST_CASE("GPU and MIG UUIDs are kept as they are", "[gpu_inventory]") {
  CHECK(visibleGpuIds(std::string("GPU-abc"), 1) == Ids{"GPU-abc"});
  CHECK(visibleGpuIds(std::string("GPU-abc,MIG-def"), 2) == Ids{"GPU-abc", "MIG-def"});
  CHECK(visibleGpuIds(std::string("GPU-abc,GPU-abc,0"), 2) == Ids{"GPU-abc"});
}

TEST_CASE("physicalGpuCount honours PLTRUN_FAKE_GPUS", "[gpu_inventory]") {
  SECTION("a count") {
    ScopedEnv fake("PLTRUN_FAKE_GPUS", std::string("3"));
    CHECK(physicalGpuCount() == 3);
  }
  SECTION("zero") {
    ScopedEnv fake("PLTRUN_FAKE_GPUS", std::string("0"));
    CHECK(physicalGpuCount() == 0);
  }
  SECTION("garbage or a negative count means no GPU") {
    {
      ScopedEnv fake("PLTRUN_FAKE_GPUS", std::string("lots"));
      CHECK(physicalGpuCount() == 0);
    }
    {
      ScopedEnv fake("PLTRUN_FAKE_GPUS", std::string("-2"));
      CHECK(physicalGpuCount() == 0);
    }
  }
  SECTION("the variable is restored after the test") {
    const char* before = std::getenv("PLTRUN_FAKE_GPUS");
    std::optional<std::string> saved = before ? std::optional<std::string>(before) : std::nullopt;
    { ScopedEnv fake("PLTRUN_FAKE_GPUS", std::string("5")); }
    const char* after = std::getenv("PLTRUN_FAKE_GPUS");
    CHECK((after ? std::optional<std::string>(after) : std::nullopt) == saved);
  }
}

TEST_CASE("CUDA's index names a GPU through the PCI bus ids, in CUDA_DEVICE_ORDER's order", "[gpu_inventory]") {
  using pltrun::NvmlGpu;
  using pltrun::nvmlIndexOfCudaIndex;
  // NVML's order is not the bus order here: CUDA's index N is the GPU with the Nth bus id.
  const std::vector<NvmlGpu> same{
      {0, 0x3b, 0, "NVIDIA H100"}, {0, 0x1a, 0, "NVIDIA H100"}, {1, 0x05, 0, "NVIDIA H100"}};
  for (const std::optional<std::string>& order :
       {std::optional<std::string>("PCI_BUS_ID"), std::optional<std::string>(), std::optional<std::string>("")}) {
    CHECK(nvmlIndexOfCudaIndex(0, same, order).nvmlIndex == 1u);
    CHECK(nvmlIndexOfCudaIndex(1, same, order).nvmlIndex == 0u);
    CHECK(nvmlIndexOfCudaIndex(2, same, order).nvmlIndex == 2u);  // domain 1 sorts after every bus of domain 0
  }
  CHECK_THAT(nvmlIndexOfCudaIndex(3, same, std::nullopt).problem, Catch::Matchers::Contains("NVML lists 3 GPU(s)"));
  SECTION("GPUs of different models: the bus order with PCI_BUS_ID, else a refusal that says what to set") {
    const std::vector<NvmlGpu> mixed{{0, 0x65, 0, "NVIDIA GeForce RTX 4090"}, {0, 0x17, 0, "NVIDIA GeForce GTX 1080"}};
    CHECK(nvmlIndexOfCudaIndex(0, mixed, std::string("PCI_BUS_ID")).nvmlIndex == 1u);
    for (const std::optional<std::string>& order :
         {std::optional<std::string>(), std::optional<std::string>("FASTEST_FIRST")}) {
      const auto choice = nvmlIndexOfCudaIndex(0, mixed, order);
      CHECK_FALSE(choice.nvmlIndex);
      CHECK_THAT(choice.problem, Catch::Matchers::Contains("NVIDIA GeForce GTX 1080, NVIDIA GeForce RTX 4090") &&
                                     Catch::Matchers::Contains("set CUDA_DEVICE_ORDER=PCI_BUS_ID"));
    }
  }
}
